import CivilDates
import Ledger

/// The figures operators read beside the ledger's (issue 28): refund rates, revenue per paying
/// user, production revenue per storefront, the trailing 30 and 90 days of a daily report, and the
/// month a month report is of. Kept apart from `RevenueReport`'s own fields so the reports' core
/// stays as it was; every figure here is derived from the same snapshot.
public struct OperatorFigures: Sendable, Hashable {
    /// Production revenue per currency and storefront for each of the report's periods (as
    /// `RevenueReport.periods`), and for the whole report (the periods' sum: nothing here is a
    /// distinct count, so the sum is exact).
    public internal(set) var storefronts: [StorefrontFigures] = []
    public internal(set) var wholeStorefronts = StorefrontFigures()
    /// Daily only: the `RevenueReporter.historyDays` days ending on the report's day, oldest first
    /// (read through the report day cache, like the 14-day trend, which is their last 14).
    public internal(set) var trailing: [PeriodFigures] = []
    /// Daily only: production totals per currency over the 7, 30 and 90 days ending on the day.
    public internal(set) var trailingTotals: [TrailingTotals] = []
    /// A month report's month, `2026-11` (its folder name); nil for other reports.
    public internal(set) var month: String?

    public init() {}
}

/// Production totals per currency over the `days` days ending on a daily report's day: units and
/// amounts summed over the days (they add up); buyers are not (distinct counts do not add up across
/// days), so they are zero here and the reports leave them out.
public struct TrailingTotals: Sendable, Hashable {
    public let days: Int
    public let first: CalendarDate
    public let last: CalendarDate
    public let totals: [String: RevenueFigures]

    public func total(_ currency: String) -> RevenueFigures { totals[currency] ?? RevenueFigures() }
}

/// Identifies a storefront line: a currency and StoreKit's storefront (ISO 3166-1 alpha-3, `KOR`),
/// nil when the purchase has none (classic receipts and purchases recorded before it was stored).
public struct StorefrontKey: Sendable, Hashable, Comparable {
    public let currency: String
    public let storefront: String?

    public init(currency: String, storefront: String?) {
        self.currency = currency
        self.storefront = storefront
    }

    /// `KOR`, or `unknown` for a purchase without a storefront.
    public var storefrontText: String { storefront ?? "unknown" }

    /// By currency, then storefront code, `unknown` last.
    public static func < (lhs: StorefrontKey, rhs: StorefrontKey) -> Bool {
        (lhs.currency, lhs.storefront == nil ? 1 : 0, lhs.storefront ?? "")
            < (rhs.currency, rhs.storefront == nil ? 1 : 0, rhs.storefront ?? "")
    }
}

/// Production revenue per currency and storefront in one period: units, amounts and the estimated
/// commission (`RevenueFigures` without buyers), refunds attributed to the storefront of the
/// purchase they refund, counted on the day the store processed them, as everywhere in the report.
public struct StorefrontFigures: Sendable, Hashable {
    public internal(set) var lines: [StorefrontKey: RevenueFigures] = [:]

    public init() {}

    /// The lines of `currency` (all currencies when nil), in report order.
    public func sortedLines(currency: String? = nil) -> [(key: StorefrontKey, figures: RevenueFigures)] {
        lines.filter { currency == nil || $0.key.currency == currency }.sorted { $0.key < $1.key }.map {
            ($0.key, $0.value)
        }
    }

    public var currencies: [String] { Set(lines.keys.map(\.currency)).sorted() }

    /// Adds every line of `other`; fails instead of trapping when an amount overflows Int64.
    mutating func add(_ other: StorefrontFigures) throws(ReportError) {
        for (key, figures) in other.lines { try lines[key, default: RevenueFigures()].addAmounts(of: figures) }
    }
}

/// Refund rates and revenue per paying user, in exact integer arithmetic.
///
/// - Refund rate (units) = refunds ÷ purchases, both counted in the same period (a refund on the day
///   the store processed it, whatever day its purchase was made; reversals are not subtracted), so
///   it can exceed 100%. Shown as a percentage with one decimal, rounded half up; nil (shown "—",
///   an empty CSV field) when there were no purchases.
/// - Refund rate (amount) = refunded amount ÷ gross, the same way.
/// - ARPPU = net revenue ÷ buyers (distinct users who paid in that currency in the period), in
///   milliunits rounded half to even; nil without buyers.
public enum OperatorRates {
    /// `numerator / denominator` as a percentage with one decimal, rounded half up: `12.5`,
    /// `150.0`, `0.0`. Nil when `denominator` is zero; both are never negative in a report.
    public static func percent(_ numerator: Int64, of denominator: Int64) -> String? {
        guard denominator > 0, numerator >= 0 else { return nil }
        // Tenths of a percent: numerator × 1000 / denominator, half up, without overflow.
        let scaled = Int128(numerator) * 1000
        let tenths = (scaled * 2 + Int128(denominator)) / (Int128(denominator) * 2)
        return "\(CurrencyFormat.groupThousands(String(tenths / 10))).\(tenths % 10)"
    }

    /// The refund rate in units of `line`, as `percent`.
    public static func unitRefundRate(_ line: RevenueFigures) -> String? {
        percent(Int64(line.refunds), of: Int64(line.purchases))
    }

    /// The refund rate in money of `line`, as `percent`.
    public static func amountRefundRate(_ line: RevenueFigures) -> String? {
        percent(line.refundedMilli, of: line.grossMilli)
    }

    /// Net revenue per buyer in milliunits, rounded half to even; nil without buyers.
    public static func arppuMilli(_ line: RevenueFigures) -> Int64? {
        guard line.buyers > 0 else { return nil }
        return quotientHalfEven(line.netMilli, Int64(line.buyers))
    }

    /// `numerator / denominator` (denominator > 0) rounded to the nearest integer, ties to even.
    public static func quotientHalfEven(_ numerator: Int64, _ denominator: Int64) -> Int64 {
        precondition(denominator > 0)
        let magnitude = numerator.magnitude
        let divisor = UInt64(denominator)
        var quotient = magnitude / divisor
        let remainder = magnitude % divisor
        // remainder < divisor ≤ Int64.max, so doubling it cannot overflow UInt64.
        if remainder * 2 > divisor || (remainder * 2 == divisor && quotient % 2 == 1) { quotient += 1 }
        // A negative quotient's magnitude may be 2^63 (Int64.min ÷ 1): negate in two's complement.
        return numerator < 0 ? Int64(truncatingIfNeeded: 0 &- quotient) : Int64(quotient)
    }
}
