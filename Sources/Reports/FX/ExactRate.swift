/// An exchange rate as an exact fraction: how many units of a currency one unit of the reporting
/// currency buys (`1391.25` KRW per USD is 139125/100). Parsed from decimal text, crossed through
/// the euro by exact division, never floating point, so a converted amount is the true quotient
/// rounded once.
///
/// Bounds: a decimal rate has at most ``maximumDigits`` digits, ``maximumFractionDigits`` of them
/// after the point, so numerator and denominator stay below 10^18, a cross rate's below 10^36
/// (< 2^120), and `amount × denominator` fits the 256-bit product `convert` divides.
public struct ExactRate: Sendable, Hashable, CustomStringConvertible {
    public static let maximumDigits = 18
    public static let maximumFractionDigits = 12

    /// The rate is `numerator / denominator`, both above zero, in lowest terms.
    public let numerator: UInt128
    public let denominator: UInt128
    /// The rate as people read it: the decimal as the file wrote it, or `1623.45 / 1.1617` for a
    /// rate crossed through the euro.
    public let text: String

    /// Rate 1: the reporting currency itself.
    public static let one = ExactRate(numerator: 1, denominator: 1, text: "1")

    init(numerator: UInt128, denominator: UInt128, text: String) {
        let divisor = Self.gcd(numerator, denominator)
        self.numerator = numerator / divisor
        self.denominator = denominator / divisor
        self.text = text
    }

    /// Why decimal text is not a rate (the caller adds the file, line and column).
    public enum ParseFailure: Error, Sendable, Equatable, CustomStringConvertible {
        case notADecimal
        case tooManyDigits
        case notPositive

        public var description: String {
            switch self {
            case .notADecimal: "not a decimal number such as 1391.25 (digits, at most one '.', no sign or exponent)"
            case .tooManyDigits:
                "more than \(ExactRate.maximumDigits) digits or \(ExactRate.maximumFractionDigits) decimals"
            case .notPositive: "a rate must be above zero"
            }
        }
    }

    /// Parses `1391.25`, `0.00071878`, `175` (digits with at most one point, digits on both sides of it).
    public static func parse(_ text: Substring) -> Result<ExactRate, ParseFailure> {
        // One pass over the bytes, no allocation: a rates file has hundreds of thousands of them.
        var numerator: UInt128 = 0
        var denominator: UInt128 = 1
        var wholeDigits = 0
        var fractionDigits = 0
        var significantDigits = 0
        var seenPoint = false
        for byte in text.utf8 {
            if byte == UInt8(ascii: ".") {
                guard !seenPoint else { return .failure(.notADecimal) }
                seenPoint = true
            } else if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                if seenPoint {
                    fractionDigits += 1
                    guard fractionDigits <= maximumFractionDigits else { return .failure(.tooManyDigits) }
                    denominator *= 10
                } else {
                    wholeDigits += 1
                }
                if numerator > 0 || byte != UInt8(ascii: "0") {
                    significantDigits += 1
                    guard significantDigits <= maximumDigits else { return .failure(.tooManyDigits) }
                    numerator = numerator * 10 + UInt128(byte - UInt8(ascii: "0"))
                }
            } else {
                return .failure(.notADecimal)
            }
        }
        guard wholeDigits > 0, !seenPoint || fractionDigits > 0 else { return .failure(.notADecimal) }
        guard numerator > 0 else { return .failure(.notPositive) }
        return .success(ExactRate(numerator: numerator, denominator: denominator, text: String(text)))
    }

    /// `self / other`: with `self` units of X per EUR and `other` units of R per EUR, the units of X
    /// per R. Exact: (a/b) / (c/d) = (a·d) / (b·c), each product below 10^36 for parsed rates.
    public func dividedBy(_ other: ExactRate) -> ExactRate {
        ExactRate(
            numerator: numerator * other.denominator, denominator: denominator * other.numerator,
            text: "\(text) / \(other.text)")
    }

    /// `1 / self`: with `self` units of R per EUR, the euros per R.
    public var reciprocal: ExactRate {
        ExactRate(numerator: denominator, denominator: numerator, text: "1 / \(text)")
    }

    public var isOne: Bool { numerator == 1 && denominator == 1 }

    public var description: String { text }

    /// `milli` milliunits of the currency in the reporting currency's milliunits: `milli / rate`
    /// = `milli × denominator / numerator`, exact, rounded once half to even.
    /// - Throws: `ReportError(.overflow)` when the result does not fit in Int64.
    public func convert(_ milli: Int64) throws(ReportError) -> Int64 {
        let magnitude = UInt128(milli.magnitude)
        let product = magnitude.multipliedFullWidth(by: denominator)
        // The quotient fits in 128 bits only when the high half is below the divisor.
        guard product.high < numerator else { throw RevenueFigures.overflowError }
        let (exact, remainder) = numerator.dividingFullWidth(product)
        guard exact <= UInt128(Int64.max) else { throw RevenueFigures.overflowError }
        var quotient = exact
        // numerator < 2^120, so 2 × remainder cannot overflow.
        let twice = remainder &* 2
        if twice > numerator || (twice == numerator && quotient & 1 == 1) { quotient += 1 }
        guard quotient <= UInt128(Int64.max) else { throw RevenueFigures.overflowError }
        let value = Int64(quotient)
        return milli < 0 ? -value : value
    }

    static func gcd(_ a: UInt128, _ b: UInt128) -> UInt128 {
        var (x, y) = (a, b)
        while y != 0 { (x, y) = (y, x % y) }
        return x == 0 ? 1 : x
    }
}
