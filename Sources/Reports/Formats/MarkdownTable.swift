/// A GitHub-flavoured Markdown table whose columns are padded to line up in plain text too
/// (Hangul and other wide characters count as two columns, as terminals show them). Its cells are
/// `ReportText`s: a name or an id from outside is text, written as text by each document.
struct MarkdownTable {
    enum Alignment {
        case left
        case right
    }

    let headers: [ReportText]
    let alignments: [Alignment]
    private(set) var rows: [[ReportText]] = []

    init(_ columns: [(ReportText, Alignment)]) {
        headers = columns.map(\.0)
        alignments = columns.map(\.1)
    }

    mutating func append(_ row: [ReportText]) {
        precondition(row.count == headers.count, "a row of \(row.count) cells in a table of \(headers.count) columns")
        rows.append(row)
    }

    var isEmpty: Bool { rows.isEmpty }

    func render() -> String {
        let cells = ([headers] + rows).map { $0.map { MarkdownDocument.inline($0, inTable: true) } }
        var widths = [Int](repeating: 3, count: headers.count)
        for row in cells {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], Self.displayWidth(cell)) }
        }
        func line(_ row: [String]) -> String {
            let padded = row.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: widths[column] - Self.displayWidth(cell))
                return alignments[column] == .right ? padding + cell : cell + padding
            }
            return "| " + padded.joined(separator: " | ") + " |"
        }
        let rule = widths.enumerated().map { column, width in
            alignments[column] == .right
                ? String(repeating: "-", count: width - 1) + ":" : String(repeating: "-", count: width)
        }
        var lines = [line(cells[0]), "| " + rule.joined(separator: " | ") + " |"]
        lines += cells.dropFirst().map(line)
        return lines.joined(separator: "\n") + "\n"
    }

    /// The report's own marks in a cell: pipes would end the cell, line breaks the table.
    static func escape(_ cell: String) -> String {
        var escaped = ""
        for character in cell {
            switch character {
            case "|": escaped += "\\|"
            case "\n", "\r", "\r\n": escaped += " "
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// Columns a monospaced terminal gives `text`: two for East Asian wide characters.
    static func displayWidth(_ text: String) -> Int {
        text.unicodeScalars.reduce(0) { width, scalar in
            switch scalar.value {
            case 0x0300...0x036F, 0x200B...0x200F, 0xFE00...0xFE0F: width  // combining marks, zero-width
            case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
                0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x1F300...0x1F64F,
                0x20000...0x3FFFD:
                width + 2
            default: width + 1
            }
        }
    }
}
