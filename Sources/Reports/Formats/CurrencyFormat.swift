/// Shows milliunit amounts in a currency's normal precision (ISO 4217 minor units: KRW and JPY
/// none, USD two, KWD three), exactly: an amount that is not a whole number of minor units is shown
/// with all three milliunit decimals rather than rounded.
public enum CurrencyFormat {
    /// Currencies whose minor unit is not 1/100 (ISO 4217); every other code has two decimals.
    static let exponents: [String: Int] = [
        "BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "ISK": 0, "JPY": 0, "KMF": 0, "KRW": 0, "PYG": 0, "RWF": 0,
        "UGX": 0, "UYI": 0, "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
        "BHD": 3, "IQD": 3, "JOD": 3, "KWD": 3, "LYD": 3, "OMR": 3, "TND": 3,
        "CLF": 4, "UYW": 4,
    ]

    /// Decimal places of `currency`'s minor unit.
    public static func exponent(_ currency: String) -> Int { exponents[currency] ?? 2 }

    /// Milliunits in one minor unit: 1,000 for KRW, 10 for USD, 1 for KWD (and for currencies
    /// finer than a milliunit, which the ledger cannot hold anyway).
    public static func minorUnitMilli(_ currency: String) -> Int64 {
        var step: Int64 = 1
        for _ in 0..<max(0, 3 - exponent(currency)) { step *= 10 }
        return step
    }

    /// `2500000` KRW → `2500`; `990` USD → `0.99`; `-1990` USD → `-1.99`; `1234` KRW → `1.234`.
    /// With `grouping`, thousands are separated by commas (`2,500`), for people; CSV has none.
    public static func amount(_ milli: Int64, currency: String, grouping: Bool = false) -> String {
        let exponent = exponent(currency)
        let step = minorUnitMilli(currency)
        let decimals = milli % step == 0 ? exponent : max(exponent, 3)
        let magnitude = milli.magnitude
        let whole = magnitude / 1000
        let fraction = magnitude % 1000
        var text = grouping ? groupThousands(String(whole)) : String(whole)
        if decimals > 0 {
            var fractionText = String(fraction)
            fractionText = String(repeating: "0", count: 3 - fractionText.count) + fractionText
            if decimals < 3 {
                fractionText = String(fractionText.prefix(decimals))
            } else if decimals > 3 {
                fractionText += String(repeating: "0", count: decimals - 3)
            }
            text += "." + fractionText
        }
        return milli < 0 ? "-" + text : text
    }

    /// `numerator / denominator` milliunits rounded half away from zero to the minor unit, for
    /// averages shown to people (never for figures).
    public static func roundedQuotient(_ numerator: Int64, dividedBy denominator: Int64, currency: String) -> Int64 {
        precondition(denominator > 0)
        let step = minorUnitMilli(currency)
        let divisor = denominator * step
        let half = divisor / 2
        let units = numerator >= 0 ? (numerator + half) / divisor : -((-numerator + half) / divisor)
        return units * step
    }

    /// `1234567` → `1,234,567`.
    public static func groupThousands(_ digits: String) -> String {
        var result = ""
        for (offset, character) in digits.enumerated() {
            if offset > 0 && (digits.count - offset) % 3 == 0 { result.append(",") }
            result.append(character)
        }
        return result
    }

    /// A count for people: `12345` → `12,345`.
    public static func count(_ value: Int) -> String {
        value < 0 ? "-" + groupThousands(String(value.magnitude)) : groupThousands(String(value))
    }
}
