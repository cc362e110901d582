/// Lines of a Markdown document, each block separated by one blank line, ending in one newline.
struct MarkdownDocument {
    private var blocks: [String] = []

    mutating func heading(_ level: Int, _ text: String) {
        blocks.append(String(repeating: "#", count: level) + " " + text)
    }

    mutating func paragraph(_ text: String) { blocks.append(text) }

    mutating func bullets(_ items: [String]) {
        blocks.append(items.map { "- " + $0 }.joined(separator: "\n"))
    }

    mutating func table(_ table: MarkdownTable) {
        var text = table.render()
        text.removeLast()  // the block separator adds the line end
        blocks.append(text)
    }

    mutating func fenced(_ language: String, _ lines: [String]) {
        blocks.append((["```" + language] + lines + ["```"]).joined(separator: "\n"))
    }

    mutating func footer(_ text: String) {
        blocks.append("---")
        blocks.append("_" + text + "_")
    }

    var text: String { blocks.joined(separator: "\n\n") + "\n" }
}
