import Ledger

extension RevenueCSV {
    /// The level of the rows that hold a period's production totals converted to the reporting
    /// currency (`--reporting-currency`): all currencies together, in its `currency`.
    public static let convertedLevel = "converted"

    /// With a reporting currency, one row per period with production revenue lines (like the other
    /// levels, a period without any has no row), after the period's other rows: book
    /// `production`, level `converted`, the reporting currency's code, units and buyers over all
    /// currencies, amounts converted per day and currency (``ConvertedFigures``), and its refund rates
    /// and ARPPU in the reporting currency. None without one.
    static func reportingCurrencyRecords(_ report: RevenueReport, period: ReportPeriod) -> [[CSVField]] {
        guard let converted = report.converted,
            let index = report.periods.firstIndex(where: { $0.period == period }),
            converted.periods.indices.contains(index),
            !report.periods[index].currencies(in: LedgerBook.production).isEmpty
        else { return [] }
        let line = converted.periods[index]
        let money = { (milli: Int64) in CSVField.amount(milli, currency: converted.currency) }
        return [
            [
                "\(period.first)", "\(period.last)", .text(report.options.timeZone), .text(LedgerBook.production),
                .text(convertedLevel), .text(converted.currency), "", "", "", "", .number(line.purchases),
                money(line.grossMilli), .number(line.refunds), money(line.refundedMilli), .number(line.reversals),
                money(line.reversedMilli), money(line.netMilli), .decimal(report.options.commission.description),
                money(line.commissionMilli), money(line.proceedsMilli), .number(line.buyers),
                .number(line.firstTimeBuyers), 0, 0, 0, 0, 0,
            ] + operatorFields(line, currency: converted.currency)
        ]
    }
}
