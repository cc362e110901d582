/// Lines of a Markdown document, each block separated by one blank line, ending in one newline.
/// Text from outside the report is written so that it shows as it is and makes nothing (`inline`).
struct MarkdownDocument: ReportDocument {
    private var blocks: [String] = []

    mutating func heading(_ level: Int, _ text: ReportText) {
        blocks.append(String(repeating: "#", count: level) + " " + Self.inline(text))
    }

    mutating func paragraph(_ text: ReportText) { blocks.append(Self.inline(text)) }

    mutating func bullets(_ items: [ReportText]) {
        blocks.append(items.map { "- " + Self.inline($0) }.joined(separator: "\n"))
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

    mutating func footer(_ text: ReportText) {
        blocks.append("---")
        blocks.append("_" + Self.inline(text) + "_")
    }

    var text: String { blocks.joined(separator: "\n\n") + "\n" }

    /// `text` as Markdown: the report's marks as they are, text from outside escaped (`escape`) or,
    /// where the report shows it as code, in a code span of its own (`codeSpan`). In a table cell
    /// (`inTable`) a pipe in the marks or the code is written `\|`, which GitHub's tables read as a
    /// pipe, and a line break as a space.
    static func inline(_ text: ReportText, inTable: Bool = false) -> String {
        text.parts.map { part in
            switch part {
            case .markup(let markup): inTable ? MarkdownTable.escape(markup) : markup
            case .text(let text): escape(text)
            case .code(let code): codeSpan(code, inTable: inTable)
            }
        }.joined()
    }

    /// Text that shows as it is in CommonMark and GitHub's Markdown, wherever it stands (a table
    /// cell, a heading, a list item, the start of a line), and makes nothing: no link, image,
    /// autolink, HTML, emphasis, code, strikethrough or table cell. Every ASCII punctuation character
    /// (each one CommonMark lets a backslash escape) behind a backslash, but `<`, `>` and `&` as
    /// character references; a line break (which would end a table row, or start a block) as a space.
    /// Letters, digits, spaces and all other characters stay as they are.
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "&": escaped += "&amp;"
            case "\n", "\r": escaped += " "
            case _ where asciiPunctuation.contains(scalar):
                escaped += "\\"
                escaped.unicodeScalars.append(scalar)
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// CommonMark's ASCII punctuation: ``!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~``.
    static let asciiPunctuation = Set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~".unicodeScalars)

    /// Text as one code span that shows it exactly: fenced by one backtick more than its longest run
    /// of backticks (so none of its own can close the span), with a space inside each fence when it
    /// starts or ends with a backtick or with a space (a span drops one such space on each side),
    /// line breaks as spaces, and in a table `|` as `\|`. Empty text is nothing.
    static func codeSpan(_ text: String, inTable: Bool) -> String {
        var content = ""
        var longestRun = 0
        var run = 0
        for scalar in text.unicodeScalars {
            run = scalar == "`" ? run + 1 : 0
            longestRun = max(longestRun, run)
            switch scalar {
            case "\n", "\r": content += " "
            case "|" where inTable: content += "\\|"
            default: content.unicodeScalars.append(scalar)
            }
        }
        guard !content.isEmpty else { return "" }
        let fence = String(repeating: "`", count: longestRun + 1)
        let padded =
            content.hasPrefix("`") || content.hasSuffix("`")
            || (content.hasPrefix(" ") && content.hasSuffix(" ") && content.contains { $0 != " " })
        return padded ? fence + " " + content + " " + fence : fence + content + fence
    }
}
