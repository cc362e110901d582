import Foundation
import Ledger

/// The report as CSV (RFC 4180): UTF-8 with a byte order mark (so spreadsheet programs read the
/// Korean item names right), CRLF line ends, a header row, fields quoted only when they must be, and
/// text a spreadsheet would run as a formula made text (`field`).
///
/// One row per period, book, currency, kind and item, followed by the kind's total (`level` kind)
/// and, after both kinds, the currency's total (`level` currency); then grants without revenue,
/// whose currency is empty (book `promotional`: items support granted as compensation, and
/// revoked); then the same revenue rows per store (`RevenueCSV+Stores`). Production rows come first; `book` names test traffic (sandbox, stub…)
/// so a filter on `book = production` gives revenue. Amounts are decimal numbers in the currency's
/// normal precision, without thousands separators.
public enum RevenueCSV {
    public static let columns = [
        "period_start", "period_end", "time_zone", "book", "level", "currency", "item_kind", "item_index", "product_id",
        "item_name", "purchases", "gross", "refunds", "refunded_amount", "refund_reversals", "reversed_amount",
        "net_revenue", "commission_rate", "estimated_commission", "estimated_proceeds", "buyers", "first_time_buyers",
        "family_shared_grants", "family_shared_revokes", "unpriced_purchases", "support_grants", "support_revokes",
        "refund_rate_units_percent", "refund_rate_amount_percent", "arppu", "storefront", "store",
    ]

    static let byteOrderMark = "\u{FEFF}"

    public static func render(_ report: RevenueReport) -> String {
        let rows = [columns.map(CSVField.text)] + records(report)
        return byteOrderMark + rows.map { $0.map(field).joined(separator: ",") + "\r\n" }.joined()
    }

    /// The rows under the header, one field per column, before CSV quoting: the HTML report's
    /// table of every figure shows exactly these values.
    static func records(_ report: RevenueReport) -> [[CSVField]] {
        var rows: [[CSVField]] = []
        let timeZone = CSVField.text(report.options.timeZone)
        let rate = CSVField.decimal(report.options.commission.description)
        for figures in report.periods {
            let period = figures.period
            for book in figures.books {
                for (key, line) in figures.sortedLines(in: book) {
                    rows.append(
                        revenueRow(report, period: period, key: key, level: key.level.rawValue, line: line)
                            + operatorFields(line, currency: key.currency))
                }
                for (key, grants) in figures.sortedGrants(in: book) {
                    rows.append([
                        "\(period.first)", "\(period.last)", timeZone, .text(book),
                        .text(RevenueLineKey.Level.item.rawValue), "", .text(key.item.kind.rawValue),
                        .number(key.item.index), .text(report.catalog.productId(key.item)),
                        .text(report.catalog.name(key.item)), 0, 0, 0, 0, 0, 0, 0, rate, 0, 0, 0, 0,
                        .number(grants.familyShared), .number(grants.familyRevokes), .number(grants.unpriced),
                        .number(grants.supportGrants), .number(grants.supportRevokes),
                    ])
                    rows[rows.count - 1] += emptyOperatorFields
                }
            }
            rows += storeRecords(report, figures)
            rows += reportingCurrencyRecords(report, period: period)
        }
        return rows + operatorRecords(report)
    }

    /// The main columns of a revenue line of `period` (all but the operator columns).
    static func revenueRow(
        _ report: RevenueReport, period: ReportPeriod, key: RevenueLineKey, level: String, line: RevenueFigures
    ) -> [CSVField] {
        let item = key.kind.flatMap { kind in key.index.map { ItemID(kind: kind, index: $0) } }
        let money = { (milli: Int64) in CSVField.amount(milli, currency: key.currency) }
        return [
            "\(period.first)", "\(period.last)", .text(report.options.timeZone), .text(key.book), .text(level),
            .text(key.currency), .text(key.kind?.rawValue ?? ""), key.index.map(CSVField.number) ?? "",
            .text(item.map(report.catalog.productId) ?? ""), .text(item.map(report.catalog.name) ?? ""),
            .number(line.purchases), money(line.grossMilli), .number(line.refunds), money(line.refundedMilli),
            .number(line.reversals), money(line.reversedMilli), money(line.netMilli),
            .decimal(report.options.commission.description), money(line.commissionMilli), money(line.proceedsMilli),
            .number(line.buyers), .number(line.firstTimeBuyers), 0, 0, 0, 0, 0,
        ]
    }

    /// One field as written. Text gets OWASP's rule against CSV (formula) injection: when it starts
    /// with `=`, `+`, `-`, `@`, tab, CR or LF, an apostrophe goes first, so a spreadsheet shows it as
    /// text instead of running it (`-1+HYPERLINK(…)`, a catalog name, becomes `'-1+HYPERLINK(…)`). A
    /// number the report wrote stays a number (`-1.500`, a refund), unless it is not a plain decimal
    /// after all. Then RFC 4180: quoted, quotes doubled, when the field holds a quote, CR or LF, or a
    /// separator a spreadsheet may split on (comma; semicolon and tab in some locales and importers),
    /// so that no cell can begin inside it.
    static func field(_ field: CSVField) -> String {
        var text = field.value
        if !field.isNumber, let first = text.unicodeScalars.first, formulaStarts.contains(first) {
            text = "'" + text
        }
        guard text.unicodeScalars.contains(where: quoted.contains) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// OWASP's list of the characters a formula may start with.
    static let formulaStarts: Set<Unicode.Scalar> = ["=", "+", "-", "@", "\t", "\r", "\n"]

    /// What makes a field quoted.
    static let quoted: Set<Unicode.Scalar> = [",", ";", "\t", "\"", "\r", "\n"]
}
