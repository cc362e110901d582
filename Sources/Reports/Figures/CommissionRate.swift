/// The store commission the report estimates, as an exact fraction in parts per million
/// (0.30 is 300,000 ppm). Never floating point: parsed from a decimal string.
///
/// Rounding: the commission on one unit is `price × rate`, rounded half up to the currency's minor
/// unit (a whole won for KRW, a cent for USD); a row's commission is the sum over its units, so a
/// refund takes back exactly the commission its purchase added.
public struct CommissionRate: Sendable, Hashable, CustomStringConvertible {
    public static let partsPerMillionScale: Int64 = 1_000_000
    /// App Store standard rate.
    public static let standard = CommissionRate(partsPerMillion: 300_000)!
    /// App Store Small Business Program rate.
    public static let smallBusiness = CommissionRate(partsPerMillion: 150_000)!

    public let partsPerMillion: Int64

    public init?(partsPerMillion: Int64) {
        guard (0...Self.partsPerMillionScale).contains(partsPerMillion) else { return nil }
        self.partsPerMillion = partsPerMillion
    }

    /// Parses a decimal fraction between 0 and 1 with at most 6 decimals: `0.3`, `0.15`, `0.275`, `1`.
    public init?(decimal text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = parts.first, !whole.isEmpty, whole.count <= 1,
            whole.allSatisfy({ $0 == "0" || $0 == "1" })
        else { return nil }
        var value = Int64(whole == "1" ? Self.partsPerMillionScale : 0)
        if parts.count == 2 {
            let digits = parts[1]
            guard (1...6).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                let fraction = Int64(digits)
            else { return nil }
            var scale: Int64 = 1
            for _ in digits.count..<6 { scale *= 10 }
            value += fraction * scale
        }
        self.init(partsPerMillion: value)
    }

    /// The commission on one unit priced `priceMilli`, rounded half up to `currency`'s minor unit.
    public func commissionMilli(onUnitPriced priceMilli: Int64, currency: String) -> Int64 {
        let step = Int128(CurrencyFormat.minorUnitMilli(currency))
        let scaled = Int128(priceMilli) * Int128(partsPerMillion)
        let divisor = Int128(Self.partsPerMillionScale) * step
        // Prices are never negative (a CHECK in the schema), so half up is simply + divisor / 2.
        let units = (scaled + divisor / 2) / divisor
        return Int64(units * step)
    }

    /// The rate as a decimal fraction with at least two decimals: `0.30`, `0.15`, `0.275`.
    public var description: String {
        if partsPerMillion == Self.partsPerMillionScale { return "1.00" }
        var digits = String(partsPerMillion)
        digits = String(repeating: "0", count: 6 - digits.count) + digits
        while digits.count > 2 && digits.hasSuffix("0") { digits.removeLast() }
        return "0." + digits
    }

    /// The rate as a percentage for people: `30%`, `15%`, `27.5%`.
    public var percentText: String {
        let tenThousandths = partsPerMillion  // ppm / 10,000 = percent
        let whole = tenThousandths / 10_000
        var fraction = String(tenThousandths % 10_000)
        fraction = String(repeating: "0", count: 4 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return fraction.isEmpty ? "\(whole)%" : "\(whole).\(fraction)%"
    }
}
