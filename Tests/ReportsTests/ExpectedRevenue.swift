import Foundation
import Ledger
import Reports

/// What happened in a test ledger, as the test generated it, and the figures a report must show,
/// computed here from those events alone (Foundation's calendar for days, Decimal for commission),
/// never by the code under test.
struct TestLedgerEvents {
    struct Sale {
        let transactionId: String
        let uid: String
        let item: ItemID
        let production: Bool
        let bought: Bool  // false: family-shared
        let priceMilli: Int64?
        let currency: String?
        let at: Date
        var storefront: String? = nil
    }

    struct Refund {
        let transactionId: String
        let at: Date
        let reversal: Bool
    }

    var sales: [Sale] = []
    var refunds: [Refund] = []

    struct Key: Hashable {
        let currency: String
        let kind: ItemKind?
        let index: Int?
    }

    struct Figures: Equatable {
        var purchases = 0
        var gross: Int64 = 0
        var refunds = 0
        var refunded: Int64 = 0
        var reversals = 0
        var reversed: Int64 = 0
        var commission: Int64 = 0
        var buyers = 0
        var firstTime = 0
        var net: Int64 { gross - refunded + reversed }
        var proceeds: Int64 { net - commission }
    }

    /// The local day (YYYY-MM-DD) of `date` in `zone`.
    static func localDay(_ date: Date, _ zone: String) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zone)!
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
    }

    /// Commission on one unit, half up to the currency's minor unit, with Decimal arithmetic.
    static func unitCommission(_ price: Int64, currency: String, rate: Decimal) -> Int64 {
        let decimals: Int16 = ["KRW": 0, "JPY": 0, "KWD": 3][currency] ?? 2
        var amount = Decimal(price) / 1000 * rate
        var rounded = Decimal()
        NSDecimalRound(&rounded, &amount, Int(decimals), .plain)
        return Int64(truncating: NSDecimalNumber(decimal: rounded * 1000))
    }

    /// Expected production figures for `day` in `zone`, per item, kind and currency.
    func expected(day: String, zone: String, rate: Decimal = Decimal(string: "0.3")!) -> [Key: Figures] {
        var result: [Key: Figures] = [:]
        var buyers: [Key: Set<String>] = [:]
        var firstTime: [Key: Set<String>] = [:]
        let paid = sales.filter { $0.production && $0.bought && $0.priceMilli != nil }
        let firstPurchase = Dictionary(grouping: paid, by: \.uid).mapValues { $0.map(\.at).min()! }
        func keys(_ sale: Sale) -> [Key] {
            [
                Key(currency: sale.currency!, kind: sale.item.kind, index: sale.item.index),
                Key(currency: sale.currency!, kind: sale.item.kind, index: nil),
                Key(currency: sale.currency!, kind: nil, index: nil),
            ]
        }
        for sale in paid where Self.localDay(sale.at, zone) == day {
            let commission = Self.unitCommission(sale.priceMilli!, currency: sale.currency!, rate: rate)
            for key in keys(sale) {
                result[key, default: Figures()].purchases += 1
                result[key, default: Figures()].gross += sale.priceMilli!
                result[key, default: Figures()].commission += commission
                buyers[key, default: []].insert(sale.uid)
                if Self.localDay(firstPurchase[sale.uid]!, zone) == day { firstTime[key, default: []].insert(sale.uid) }
            }
        }
        let byId = Dictionary(uniqueKeysWithValues: paid.map { ($0.transactionId, $0) })
        for refund in refunds where Self.localDay(refund.at, zone) == day {
            guard let sale = byId[refund.transactionId] else { continue }
            let commission = Self.unitCommission(sale.priceMilli!, currency: sale.currency!, rate: rate)
            for key in keys(sale) {
                if refund.reversal {
                    result[key, default: Figures()].reversals += 1
                    result[key, default: Figures()].reversed += sale.priceMilli!
                    result[key, default: Figures()].commission += commission
                } else {
                    result[key, default: Figures()].refunds += 1
                    result[key, default: Figures()].refunded += sale.priceMilli!
                    result[key, default: Figures()].commission -= commission
                }
            }
        }
        for (key, users) in buyers { result[key]!.buyers = users.count }
        for (key, users) in firstTime { result[key]!.firstTime = users.count }
        return result
    }
}

extension TestLedgerEvents {
    /// Expected production gross and refunded amounts (and units) of `day` in `zone` per currency and
    /// storefront (`unknown` for none): purchases on their day, refunds and reversals on theirs, in
    /// the storefront of the purchase they refund.
    func expectedStorefronts(day: String, zone: String) -> [String: Figures] {
        var result: [String: Figures] = [:]
        let paid = sales.filter { $0.production && $0.bought && $0.priceMilli != nil }
        func key(_ sale: Sale) -> String { "\(sale.currency!) \(sale.storefront ?? "unknown")" }
        for sale in paid where Self.localDay(sale.at, zone) == day {
            result[key(sale), default: Figures()].purchases += 1
            result[key(sale), default: Figures()].gross += sale.priceMilli!
        }
        let byId = Dictionary(uniqueKeysWithValues: paid.map { ($0.transactionId, $0) })
        for refund in refunds where Self.localDay(refund.at, zone) == day {
            guard let sale = byId[refund.transactionId] else { continue }
            if refund.reversal {
                result[key(sale), default: Figures()].reversals += 1
                result[key(sale), default: Figures()].reversed += sale.priceMilli!
            } else {
                result[key(sale), default: Figures()].refunds += 1
                result[key(sale), default: Figures()].refunded += sale.priceMilli!
            }
        }
        return result
    }
}

extension TestLedgerEvents.Figures {
    /// The same figures read from a CSV row.
    init(csv row: [String: String]) {
        self.init(
            purchases: Int(row["purchases"]!)!, gross: milli(row["gross"])!, refunds: Int(row["refunds"]!)!,
            refunded: milli(row["refunded_amount"])!, reversals: Int(row["refund_reversals"]!)!,
            reversed: milli(row["reversed_amount"])!, commission: milli(row["estimated_commission"])!,
            buyers: Int(row["buyers"]!)!, firstTime: Int(row["first_time_buyers"]!)!)
    }
}
