import CivilDates

/// A text of the report's sections, as a `ReportDocument` takes it: the report's own inline marks
/// (`**strong**`, `` `code` ``), kept apart from text that comes from outside the report (catalog
/// names, product ids, Apple's SKUs and product types, storefronts, transaction ids, countries,
/// file names, reconciliation details), which each document writes so that it shows exactly that
/// text and makes no markup (`MarkdownDocument.inline`, `HTMLDocument.inline`).
///
/// A string literal is the report's own markup; a `String` interpolated into one (or given as
/// `.text`) is text from outside, and so is every `String` unless said otherwise: `markup(_:)` (or
/// `\(markup:)`) is for strings the report made itself, numbers and dates it formatted. Integers
/// and dates interpolated are markup. `\(code:)` is outside text shown as code.
struct ReportText: Hashable, Sendable, ExpressibleByStringLiteral, ExpressibleByStringInterpolation {
    enum Part: Hashable, Sendable {
        /// The report's own Markdown: inline marks only.
        case markup(String)
        /// Text from outside, shown as it is.
        case text(String)
        /// Text from outside, shown as it is as code.
        case code(String)
    }

    private(set) var parts: [Part]

    init(parts: [Part]) { self.parts = parts }

    init(stringLiteral value: String) { self.init(parts: value.isEmpty ? [] : [.markup(value)]) }

    init(stringInterpolation: StringInterpolation) { self.init(parts: stringInterpolation.parts) }

    static func markup(_ value: String) -> ReportText { ReportText(stringLiteral: value) }

    static func text(_ value: String) -> ReportText { ReportText(parts: value.isEmpty ? [] : [.text(value)]) }

    static func code(_ value: String) -> ReportText { ReportText(parts: [.code(value)]) }

    static func + (lhs: ReportText, rhs: ReportText) -> ReportText { ReportText(parts: lhs.parts + rhs.parts) }

    static func += (lhs: inout ReportText, rhs: ReportText) { lhs.parts += rhs.parts }

    /// The text cut at each line break of its markup (a bullet's continuation lines); line breaks in
    /// outside text are no lines.
    var lines: [ReportText] {
        var lines = [ReportText(parts: [])]
        for part in parts {
            guard case .markup(let markup) = part else {
                lines[lines.count - 1].parts.append(part)
                continue
            }
            for (index, line) in markup.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                if index > 0 { lines.append(ReportText(parts: [])) }
                if !line.isEmpty { lines[lines.count - 1].parts.append(.markup(String(line))) }
            }
        }
        return lines
    }

    struct StringInterpolation: StringInterpolationProtocol {
        fileprivate(set) var parts: [Part] = []

        init(literalCapacity: Int, interpolationCount: Int) {}

        mutating func appendLiteral(_ literal: String) {
            if !literal.isEmpty { parts.append(.markup(literal)) }
        }

        /// Text from outside.
        mutating func appendInterpolation(_ text: String) {
            if !text.isEmpty { parts.append(.text(text)) }
        }

        mutating func appendInterpolation(_ text: ReportText) { parts += text.parts }

        /// A string the report made itself (a date, a duration, a figure, a time zone name the
        /// database knows), written as it is.
        mutating func appendInterpolation(markup: String) { appendLiteral(markup) }

        /// Text from outside, shown as code.
        mutating func appendInterpolation(code: String) { parts.append(.code(code)) }

        mutating func appendInterpolation(_ number: some BinaryInteger) { appendLiteral("\(number)") }

        mutating func appendInterpolation(_ date: CalendarDate) { appendLiteral(date.description) }
    }
}

extension [ReportText] {
    func joined(separator: ReportText = "") -> ReportText {
        var joined = ReportText(parts: [])
        for (index, text) in enumerated() {
            if index > 0 { joined += separator }
            joined += text
        }
        return joined
    }
}
