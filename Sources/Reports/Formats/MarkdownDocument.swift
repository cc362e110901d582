/// Lines of a Markdown document, each block separated by one blank line, ending in one newline.
struct MarkdownDocument: ReportDocument {
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

    /// The trend as a Mermaid `xychart-beta` of its first series (net revenue), which GitHub draws;
    /// the other charts' figures are in the tables beside them.
    mutating func chart(_ chart: ReportChart) {
        guard chart.purpose == .trend, let first = chart.series.first, let currency = chart.currency else { return }
        fenced(
            "mermaid",
            [
                "xychart-beta",
                "    title \"\(chart.title)\"",
                "    x-axis [" + chart.categories.map { "\"\($0)\"" }.joined(separator: ", ") + "]",
                "    y-axis \"\(currency)\"",
                "    bar [" + first.values.map { CurrencyFormat.amount($0, currency: currency) }.joined(separator: ", ")
                    + "]",
            ])
    }

    mutating func footer(_ text: String) {
        blocks.append("---")
        blocks.append("_" + text + "_")
    }

    var text: String { blocks.joined(separator: "\n\n") + "\n" }
}
