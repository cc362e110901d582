import CivilDates
import Ledger

/// `--reporting-currency` with `--fx-rates`: the one currency a report also shows its production
/// totals in, and the rates it converts with.
public struct ReportingCurrency: Sendable, Hashable {
    public let rates: FXRates

    public init(rates: FXRates) {
        self.rates = rates
    }

    public var code: String { rates.reportingCurrency }
}

/// A report's production figures converted to the reporting currency.
///
/// Where rounding happens: each day's total in each currency (gross, refunded, reversed, est.
/// commission) is divided by that day's rate exactly and rounded once, half to even, to a
/// milliunit of the reporting currency. Everything else is integer sums of those: a period's figure
/// is the sum of its days', and net revenue and est. proceeds are made from the converted sums
/// (gross − refunded + reversed, minus commission), so the reporting currency's figures add up
/// across days, currencies and periods exactly as the per-currency ones do.
public struct ConvertedFigures: Sendable, Hashable {
    /// A day and currency converted at the rate of an earlier day (the file has none for the day).
    public struct Fallback: Sendable, Hashable {
        public let day: CalendarDate
        public let currency: String
        public let rateDate: CalendarDate
    }

    /// A rate the report converted with: a currency's on a day.
    public struct UsedRate: Sendable, Hashable {
        public let day: CalendarDate
        public let currency: String
        public let rate: FXRates.DatedRate
    }

    public let currency: String
    public let rates: FXRates
    /// Aligned with `RevenueReport.periods`. Buyers are the report's distinct buyers over all
    /// currencies in the period (counted, not converted).
    public let periods: [RevenueFigures]
    /// The whole day (daily) or range.
    public let whole: RevenueFigures
    /// Daily: the 14 trend days (aligned with `RevenueReport.trend`); range: `periods`.
    public let trend: [RevenueFigures]
    /// The days and currencies converted at an earlier day's rate, by day and currency.
    public let fallbacks: [Fallback]
    /// Every rate used, by day and currency.
    public let used: [UsedRate]

    /// Converts one day's production totals; `used` gets the rate of each currency converted.
    static func convertDay(
        _ day: PeriodFigures, rates: FXRates, used: inout [UsedRate]
    ) throws(ReportError) -> RevenueFigures {
        var converted = RevenueFigures()
        let date = day.period.first
        for currency in day.currencies(in: LedgerBook.production) {
            let line = day.total(book: LedgerBook.production, currency: currency)
            var part = RevenueFigures()
            part.purchases = line.purchases
            part.refunds = line.refunds
            part.reversals = line.reversals
            let amounts = [line.grossMilli, line.refundedMilli, line.reversedMilli, line.commissionMilli]
            if amounts.contains(where: { $0 != 0 }) {
                guard let dated = rates.rate(of: currency, on: date) else {
                    throw ReportError(
                        .missingFXRate,
                        "\(rates.fileName) has no rate of \(currency) (per \(rates.reportingCurrency)) on or before "
                            + "\(date), a day of the report with \(currency) revenue; add the rate and run the report again"
                    )
                }
                used.append(UsedRate(day: date, currency: currency, rate: dated))
                part.grossMilli = try dated.rate.convert(line.grossMilli)
                part.refundedMilli = try dated.rate.convert(line.refundedMilli)
                part.reversedMilli = try dated.rate.convert(line.reversedMilli)
                part.commissionMilli = try dated.rate.convert(line.commissionMilli)
            }
            try converted.addAmounts(of: part)
        }
        return converted
    }

    /// Converts `days` (each one day of the report, in order) and sums them into `periods` (each
    /// the days between its first and last date); buyers come from the periods themselves.
    static func make(
        days: [PeriodFigures], periods: [PeriodFigures], whole: PeriodFigures, trendIsDays: Bool,
        rates: FXRates
    ) throws(ReportError) -> ConvertedFigures {
        var used: [UsedRate] = []
        var perDay: [CalendarDate: RevenueFigures] = [:]
        var dayList: [RevenueFigures] = []
        for day in days {
            let converted = try convertDay(day, rates: rates, used: &used)
            perDay[day.period.first] = converted
            dayList.append(withBuyers(converted, of: day))
        }
        func sum(over figures: PeriodFigures) throws(ReportError) -> RevenueFigures {
            var total = RevenueFigures()
            // The period's days one by one (a day without figures adds nothing): linear in days.
            var date = figures.period.first
            while date <= figures.period.last {
                if let converted = perDay[date] { try total.addAmounts(of: converted) }
                date = date.adding(days: 1)
            }
            return withBuyers(total, of: figures)
        }
        var periodList: [RevenueFigures] = []
        for period in periods { periodList.append(try sum(over: period)) }
        let fallbacks = used.filter { $0.rate.date != $0.day }.map {
            Fallback(day: $0.day, currency: $0.currency, rateDate: $0.rate.date)
        }
        return ConvertedFigures(
            currency: rates.reportingCurrency, rates: rates, periods: periodList, whole: try sum(over: whole),
            trend: trendIsDays ? dayList : periodList, fallbacks: fallbacks, used: used)
    }

    static func withBuyers(_ figures: RevenueFigures, of period: PeriodFigures) -> RevenueFigures {
        var figures = figures
        let buyers = period.buyersByBook[LedgerBook.production] ?? BuyerCounts()
        figures.buyers = buyers.buyers
        figures.firstTimeBuyers = buyers.firstTime
        return figures
    }
}
