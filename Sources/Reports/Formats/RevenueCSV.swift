import Foundation
import Ledger

/// The report as CSV (RFC 4180): UTF-8 with a byte order mark (so spreadsheet programs read the
/// Korean item names right), CRLF line ends, a header row, fields quoted only when they must be.
///
/// One row per period, book, currency, kind and item, followed by the kind's total (`level` kind)
/// and, after both kinds, the currency's total (`level` currency); then grants without revenue,
/// whose currency is empty (book `promotional`: items support granted as compensation, and
/// revoked). Production rows come first; `book` names test traffic (sandbox, stub…)
/// so a filter on `book = production` gives revenue. Amounts are decimal numbers in the currency's
/// normal precision, without thousands separators.
public enum RevenueCSV {
    public static let columns = [
        "period_start", "period_end", "time_zone", "book", "level", "currency", "item_kind", "item_index", "product_id",
        "item_name", "purchases", "gross", "refunds", "refunded_amount", "refund_reversals", "reversed_amount",
        "net_revenue", "commission_rate", "estimated_commission", "estimated_proceeds", "buyers", "first_time_buyers",
        "family_shared_grants", "family_shared_revokes", "unpriced_purchases", "support_grants", "support_revokes",
        "refund_rate_units_percent", "refund_rate_amount_percent", "arppu", "storefront",
    ]

    static let byteOrderMark = "\u{FEFF}"

    public static func render(_ report: RevenueReport) -> String {
        let rows = [columns] + records(report)
        return byteOrderMark + rows.map { $0.map(field).joined(separator: ",") + "\r\n" }.joined()
    }

    /// The rows under the header, one value per column, before CSV quoting: the HTML report's
    /// table of every figure shows exactly these.
    static func records(_ report: RevenueReport) -> [[String]] {
        var rows: [[String]] = []
        let timeZone = report.options.timeZone
        let rate = report.options.commission.description
        for figures in report.periods {
            let period = figures.period
            for book in figures.books {
                for (key, line) in figures.sortedLines(in: book) {
                    let item = key.kind.flatMap { kind in key.index.map { ItemID(kind: kind, index: $0) } }
                    let money = { (milli: Int64) in CurrencyFormat.amount(milli, currency: key.currency) }
                    rows.append([
                        "\(period.first)", "\(period.last)", timeZone, book, key.level.rawValue, key.currency,
                        key.kind?.rawValue ?? "", key.index.map(String.init) ?? "",
                        item.map(report.catalog.productId) ?? "", item.map(report.catalog.name) ?? "",
                        String(line.purchases), money(line.grossMilli), String(line.refunds), money(line.refundedMilli),
                        String(line.reversals), money(line.reversedMilli), money(line.netMilli), rate,
                        money(line.commissionMilli), money(line.proceedsMilli), String(line.buyers),
                        String(line.firstTimeBuyers), "0", "0", "0", "0", "0",
                    ])
                    rows[rows.count - 1] += operatorFields(line, currency: key.currency)
                }
                for (key, grants) in figures.sortedGrants(in: book) {
                    rows.append([
                        "\(period.first)", "\(period.last)", timeZone, book, RevenueLineKey.Level.item.rawValue, "",
                        key.item.kind.rawValue, String(key.item.index), report.catalog.productId(key.item),
                        report.catalog.name(key.item), "0", "0", "0", "0", "0", "0", "0", rate, "0", "0", "0", "0",
                        String(grants.familyShared), String(grants.familyRevokes), String(grants.unpriced),
                        String(grants.supportGrants), String(grants.supportRevokes),
                    ])
                    rows[rows.count - 1] += emptyOperatorFields
                }
            }
            rows += reportingCurrencyRecords(report, period: period)
        }
        return rows + operatorRecords(report)
    }

    /// One field: quoted when it holds a comma, quote, CR or LF (quotes doubled). Text a
    /// spreadsheet would run as a formula (`=`, `+`, `@`, or `-` before a non-digit) is prefixed
    /// with an apostrophe; negative numbers stay numbers.
    static func field(_ value: String) -> String {
        var text = value
        if let first = text.unicodeScalars.first,
            "=+@".unicodeScalars.contains(first)
                || (first == "-" && !(text.unicodeScalars.dropFirst().first.map { ("0"..."9").contains($0) } ?? false))
        {
            text = "'" + text
        }
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }) else {
            return text
        }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
