extension Pages {
    /// A sentence this code wrote, with commands in backticks: escaped, each backtick pair a `code`
    /// element (a text with an unpaired backtick stays as it is).
    static func prose(_ text: String) -> HTML {
        let parts = text.split(separator: "`", omittingEmptySubsequences: false)
        guard parts.count % 2 == 1 else { return "\(text)" }
        var html = ""
        for (offset, part) in parts.enumerated() {
            html += offset % 2 == 1 ? "<code>" + HTML.escape(String(part)) + "</code>" : HTML.escape(String(part))
        }
        return HTML(trusted: html)
    }
}
