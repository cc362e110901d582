/// One field of the CSV before it is written (`RevenueCSV.field`): a number the report wrote itself
/// (a count, an amount, a rate), or text: everything else, above all whatever came from the catalog,
/// the store or an operator (names, product ids, storefronts, codes, the time zone). A string literal
/// or interpolation is text; numbers are made only from numbers, so no text can pass for one.
struct CSVField: Hashable, Sendable, ExpressibleByStringLiteral, ExpressibleByStringInterpolation,
    ExpressibleByIntegerLiteral
{
    enum Kind: Hashable, Sendable {
        case text
        case number
    }

    let kind: Kind
    /// The value itself, as the HTML report's table of every figure shows it: no apostrophe, no quotes.
    let value: String

    private init(_ kind: Kind, _ value: String) {
        self.kind = kind
        self.value = value
    }

    init(stringLiteral value: String) { self.init(.text, value) }

    init(stringInterpolation: DefaultStringInterpolation) {
        self.init(.text, String(stringInterpolation: stringInterpolation))
    }

    init(integerLiteral value: Int) { self.init(.number, String(value)) }

    static func text(_ value: String) -> CSVField { CSVField(.text, value) }

    static func number(_ value: some BinaryInteger) -> CSVField { CSVField(.number, String(value)) }

    /// An amount in the currency's normal precision, as `CurrencyFormat.amount` writes it (`-1.500`).
    static func amount(_ milli: Int64, currency: String) -> CSVField {
        CSVField(.number, CurrencyFormat.amount(milli, currency: currency))
    }

    /// A decimal the report formatted itself (`0.30`, `12.5`).
    static func decimal(_ value: String) -> CSVField { CSVField(.number, value) }

    /// Whether the field is written as a number: one the report wrote, and a plain decimal
    /// (`-?digits[.digits]`) after all; anything else is written as text.
    var isNumber: Bool {
        guard kind == .number else { return false }
        let unsigned = value.utf8.first == UInt8(ascii: "-") ? value.utf8.dropFirst() : value.utf8[...]
        let parts = unsigned.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return (1...2).contains(parts.count)
            && parts.allSatisfy { part in
                !part.isEmpty && part.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
            }
    }
}
