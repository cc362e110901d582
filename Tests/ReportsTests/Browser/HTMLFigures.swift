import Foundation

/// Reads the figures table (`<table id="figures">`) of an HTML report back: one dictionary per
/// row, column name to the cell's text with character references decoded.
enum HTMLFigures {
    static func rows(in html: String) throws -> [[String: String]] {
        guard let start = html.range(of: "<table id=\"figures\">"),
            let end = html.range(of: "</table>", range: start.upperBound..<html.endIndex)
        else { return [] }
        let table = String(html[start.upperBound..<end.lowerBound])
        let rowPattern = try NSRegularExpression(pattern: "<tr>(.*?)</tr>", options: [.dotMatchesLineSeparators])
        let cellPattern = try NSRegularExpression(pattern: "<td data-column=\"([^\"]*)\">([^<]*)</td>")
        var rows: [[String: String]] = []
        let whole = NSRange(table.startIndex..., in: table)
        for match in rowPattern.matches(in: table, range: whole) {
            let row = String(table[Range(match.range(at: 1), in: table)!])
            let cells = cellPattern.matches(in: row, range: NSRange(row.startIndex..., in: row))
            guard !cells.isEmpty else { continue }  // the header row has <th> cells
            var fields: [String: String] = [:]
            for cell in cells {
                let column = unescape(String(row[Range(cell.range(at: 1), in: row)!]))
                fields[column] = unescape(String(row[Range(cell.range(at: 2), in: row)!]))
            }
            rows.append(fields)
        }
        return rows
    }

    static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
    }
}
