import Ledger

/// The CSV's operator figures (issue 28): three columns on every revenue row (refund rates and
/// ARPPU), and rows of their own after the others: production revenue per storefront
/// (`level` `storefront`, column `storefront`), and in a daily report the production totals of the
/// 7, 30 and 90 days ending on the day (`level` `trailing_7_days` …, `period_start` the window's first
/// day). Those rows have no buyers (empty fields: distinct buyers are not counted per storefront and
/// do not add up across days), so filtering `level` keeps every sum as it was.
extension RevenueCSV {
    /// The last five of `columns`, which every row ends with.
    static let operatorColumns = Array(columns.suffix(5))

    static let emptyOperatorFields: [CSVField] = ["", "", "", "", ""]

    /// Refund rates (percent, one decimal, half up; empty without purchases) and ARPPU (net revenue
    /// per buyer, half to even to the milliunit; empty without buyers) of a revenue line, then its
    /// storefront and store (empty: all of them).
    static func operatorFields(
        _ line: RevenueFigures, currency: String, storefront: String = "", store: String = ""
    ) -> [CSVField] {
        [
            OperatorRates.unitRefundRate(line).map(CSVField.decimal) ?? "",
            OperatorRates.amountRefundRate(line).map(CSVField.decimal) ?? "",
            OperatorRates.arppuMilli(line).map { CSVField.amount($0, currency: currency) } ?? "", .text(storefront),
            .text(store),
        ]
    }

    /// The storefront rows of each period, then (daily) the trailing windows' rows.
    static func operatorRecords(_ report: RevenueReport) -> [[CSVField]] {
        var rows: [[CSVField]] = []
        for (figures, storefronts) in zip(report.periods, report.operators.storefronts) {
            let period = figures.period
            for (key, line) in storefronts.sortedLines() {
                rows.append(
                    totalsRow(
                        report, first: "\(period.first)", last: "\(period.last)", level: "storefront",
                        currency: key.currency, line: line)
                        + operatorFields(line, currency: key.currency, storefront: key.storefrontText))
            }
        }
        for window in report.operators.trailingTotals {
            for currency in window.totals.keys.sorted() {
                let line = window.total(currency)
                rows.append(
                    totalsRow(
                        report, first: "\(window.first)", last: "\(window.last)",
                        level: "trailing_\(window.days)_days", currency: currency, line: line)
                        + operatorFields(line, currency: currency))
            }
        }
        return rows
    }

    /// The CSV's main columns for a production total without buyers.
    private static func totalsRow(
        _ report: RevenueReport, first: String, last: String, level: String, currency: String, line: RevenueFigures
    ) -> [CSVField] {
        let money = { (milli: Int64) in CSVField.amount(milli, currency: currency) }
        return [
            .text(first), .text(last), .text(report.options.timeZone), .text(LedgerBook.production), .text(level),
            .text(currency), "", "", "", "", .number(line.purchases), money(line.grossMilli), .number(line.refunds),
            money(line.refundedMilli), .number(line.reversals), money(line.reversedMilli), money(line.netMilli),
            .decimal(report.options.commission.description), money(line.commissionMilli), money(line.proceedsMilli),
            "", "", 0, 0, 0, 0, 0,
        ]
    }
}
