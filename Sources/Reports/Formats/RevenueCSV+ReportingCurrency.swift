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
    static func reportingCurrencyRecords(_ report: RevenueReport, period: ReportPeriod) -> [[String]] {
        guard let converted = report.converted,
            let index = report.periods.firstIndex(where: { $0.period == period }),
            converted.periods.indices.contains(index),
            !report.periods[index].currencies(in: LedgerBook.production).isEmpty
        else { return [] }
        let line = converted.periods[index]
        let money = { (milli: Int64) in CurrencyFormat.amount(milli, currency: converted.currency) }
        return [
            [
                "\(period.first)", "\(period.last)", report.options.timeZone, LedgerBook.production, convertedLevel,
                converted.currency, "", "", "", "", String(line.purchases), money(line.grossMilli),
                String(line.refunds), money(line.refundedMilli), String(line.reversals), money(line.reversedMilli),
                money(line.netMilli), report.options.commission.description, money(line.commissionMilli),
                money(line.proceedsMilli), String(line.buyers), String(line.firstTimeBuyers), "0", "0", "0", "0", "0",
            ] + operatorFields(line, currency: converted.currency)
        ]
    }
}
