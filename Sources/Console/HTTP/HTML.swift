/// A piece of HTML. Interpolated strings are escaped; only ``HTML`` values are inserted as they are, so a
/// page cannot carry a user's nickname, a reason or a product id as markup.
public struct HTML: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    public private(set) var text: String

    public init(stringLiteral value: String) { text = value }

    /// Markup this code wrote itself (never input).
    init(trusted: String) { text = trusted }

    public init(stringInterpolation: StringInterpolation) { text = stringInterpolation.text }

    public var description: String { text }

    public struct StringInterpolation: StringInterpolationProtocol {
        var text = ""

        public init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + interpolationCount * 16)
        }

        public mutating func appendLiteral(_ literal: String) { text += literal }
        public mutating func appendInterpolation(_ value: String) { text += HTML.escape(value) }
        public mutating func appendInterpolation(_ value: String?) { text += HTML.escape(value ?? "") }
        public mutating func appendInterpolation(_ value: Int) { text += String(value) }
        public mutating func appendInterpolation(_ value: Int64) { text += String(value) }
        public mutating func appendInterpolation(_ html: HTML) { text += html.text }
        public mutating func appendInterpolation(_ list: [HTML]) { for html in list { text += html.text } }
    }

    /// Escapes the five characters that matter in text and in quoted attribute values.
    static func escape(_ value: String) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func join(_ parts: [HTML], separator: HTML = "") -> HTML {
        HTML(trusted: parts.map(\.text).joined(separator: separator.text))
    }
}
