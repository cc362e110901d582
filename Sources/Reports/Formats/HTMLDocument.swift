import Foundation

/// An HTML page built from the report's sections. Every text and attribute value is escaped here
/// (`escape`; text from outside the report also keeps its `*`, `` ` `` and `_` from the inline
/// marks, `inline`); only this type and `SVGChart` write markup. Tables scroll sideways on a phone instead
/// of squeezing their columns. The charts are gathered "at a glance" after the report's opening
/// definitions, above the tables, for people who would rather look than read.
struct HTMLDocument: ReportDocument {
    private var body: [String] = []
    private var charts: [String] = []
    /// Where the charts go: after the first list (the definitions under the title).
    private var glanceIndex: Int?
    private var footerText: ReportText?

    mutating func heading(_ level: Int, _ text: ReportText) {
        let level = min(max(level, 1), 6)
        body.append("<h\(level)>\(Self.inline(text))</h\(level)>")
    }

    mutating func paragraph(_ text: ReportText) { body.append("<p>\(Self.inline(text))</p>") }

    mutating func bullets(_ items: [ReportText]) {
        let lines = items.map { item in
            // A bullet's continuation lines (reconciliation failures) become a nested list; their
            // indent and `- ` are the report's own marks, which escaping leaves as they are.
            let parts = item.lines.map(Self.inline)
            let nested = parts.dropFirst().map { line -> String in
                let text = line.trimmingPrefix(while: { $0 == " " })
                return "<li>\(text.hasPrefix("- ") ? text.dropFirst(2) : text)</li>"
            }
            return "<li>\(parts[0])" + (nested.isEmpty ? "" : "<ul>\(nested.joined())</ul>") + "</li>"
        }
        body.append("<ul>\n" + lines.joined(separator: "\n") + "\n</ul>")
        if glanceIndex == nil { glanceIndex = body.count }
    }

    mutating func table(_ table: MarkdownTable) {
        func cell(_ tag: String, _ text: ReportText, _ column: Int) -> String {
            // Header cells name their column for screen readers (`scope`), as the console's tables do.
            let scope = tag == "th" ? " scope=\"col\"" : ""
            let numeric = table.alignments[column] == .right ? " class=\"num\"" : ""
            return "<\(tag)\(scope)\(numeric)>\(Self.inline(text))</\(tag)>"
        }
        var lines = ["<div class=\"scroll\"><table>"]
        lines.append("<thead><tr>" + table.headers.enumerated().map { cell("th", $1, $0) }.joined() + "</tr></thead>")
        lines.append("<tbody>")
        for row in table.rows {
            lines.append("<tr>" + row.enumerated().map { cell("td", $1, $0) }.joined() + "</tr>")
        }
        lines.append("</tbody></table></div>")
        body.append(lines.joined(separator: "\n"))
    }

    mutating func chart(_ chart: ReportChart) { charts.append(SVGChart(chart).figure()) }

    mutating func footer(_ text: ReportText) { footerText = text }

    /// Every figure of the report, one row per CSV row with the same columns and values, each cell
    /// named by `data-column` so a program can read the figures back from the page.
    mutating func figuresTable(columns: [String], rows: [[String]]) {
        var lines = [
            "<details class=\"figures\">", "<summary>Every figure (the rows of revenue.csv)</summary>",
            "<div class=\"scroll\"><table id=\"figures\">",
            "<thead><tr>"
                + columns.map { "<th scope=\"col\" data-column=\"\(Self.escape($0))\">\(Self.escape($0))</th>" }
                .joined()
                + "</tr></thead>",
            "<tbody>",
        ]
        for row in rows {
            let cells = zip(columns, row).map { "<td data-column=\"\(Self.escape($0))\">\(Self.escape($1))</td>" }
            lines.append("<tr>" + cells.joined() + "</tr>")
        }
        lines += ["</tbody></table></div>", "</details>"]
        body.append(lines.joined(separator: "\n"))
    }

    /// The whole page: one file that needs nothing else (no script, no font, no image, no network:
    /// the content security policy forbids them), light or dark as the reader's system prefers.
    func page(title: String) -> String {
        var lines = [
            "<!DOCTYPE html>",
            "<html lang=\"en\">",
            "<head>",
            "<meta charset=\"utf-8\">",
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
            "<meta name=\"color-scheme\" content=\"light dark\">",
            "<title>\(Self.escape(title))</title>",
            "<style>", ReportStyleSheet.css, "</style>",
            "</head>",
            "<body>",
            "<main>",
        ]
        var blocks = body
        if !charts.isEmpty {
            let glance = ["<section class=\"glance\">", "<h2>At a glance</h2>"] + charts + ["</section>"]
            blocks.insert(glance.joined(separator: "\n"), at: glanceIndex ?? min(1, blocks.count))
        }
        lines += blocks
        if let footerText { lines.append("<footer><p>\(Self.inline(footerText))</p></footer>") }
        lines += ["</main>", "</body>", "</html>"]
        return lines.joined(separator: "\n") + "\n"
    }

    /// Text as HTML: `&`, `<`, `>`, `"` and `'` as character references.
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// A section's text as HTML: the report's marks escaped, text from outside escaped with its `*`,
    /// `` ` `` and `_` as character references too (so no mark pairs with them), code from outside
    /// in a `code` element; then the marks' pairs become elements, as for the report's own markup.
    static func inline(_ text: ReportText) -> String {
        inline(
            escaped: text.parts.map { part in
                switch part {
                case .markup(let markup): escape(markup)
                case .text(let text): escapeText(text)
                case .code(let code): "<code>" + escapeCode(code) + "</code>"
                }
            }.joined())
    }

    /// Text from outside: `escape`, and the characters of the inline marks as character references.
    static func escapeText(_ text: String) -> String {
        escape(text).replacingOccurrences(of: "_", with: "&#95;")
            .replacingOccurrences(of: "*", with: "&#42;").replacingOccurrences(of: "`", with: "&#96;")
    }

    /// Code from outside, inside its `code` element: as text, but `_` may stay (only a whole text
    /// in `_…_` is emphasis, and an element starts and ends this one).
    static func escapeCode(_ code: String) -> String {
        escape(code).replacingOccurrences(of: "*", with: "&#42;").replacingOccurrences(of: "`", with: "&#96;")
    }

    /// The sections' inline Markdown as HTML: escaped first, then `**strong**` and `` `code` `` pairs
    /// (and a whole text in `_…_`, the footer's emphasis) become elements. Escaping first means no
    /// text, whatever it holds, can become an element other than those.
    static func inline(_ markup: String) -> String { inline(escaped: escape(markup)) }

    private static func inline(escaped: String) -> String {
        var html = escaped
        html = replacePairs(of: "**", in: html, open: "<strong>", close: "</strong>")
        html = replacePairs(of: "`", in: html, open: "<code>", close: "</code>")
        if html.count > 2, html.hasPrefix("_"), html.hasSuffix("_") {
            html = "<em>" + html.dropFirst().dropLast() + "</em>"
        }
        return html
    }

    private static func replacePairs(of mark: String, in text: String, open: String, close: String) -> String {
        let parts = text.components(separatedBy: mark)
        guard parts.count >= 3 else { return text }
        var result = parts[0]
        for (offset, part) in parts.enumerated().dropFirst() {
            // An unpaired last mark stays as it was.
            if offset == parts.count - 1 && offset % 2 == 1 {
                result += mark + part
            } else {
                result += (offset % 2 == 1 ? open : close) + part
            }
        }
        return result
    }
}
