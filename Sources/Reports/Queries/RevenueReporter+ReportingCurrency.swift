import CivilDates
import Postgres

extension RevenueReporter {
    /// The daily report in the reporting currency: its 14 trend days are days already, each
    /// converted at its own rate.
    static func convertedDaily(
        _ trend: [PeriodFigures], options: ReportOptions
    ) throws(ReportError)
        -> ConvertedFigures?
    {
        guard let reporting = options.reportingCurrency, let day = trend.last else { return nil }
        return try ConvertedFigures.make(
            days: trend, periods: [day], whole: day, trendIsDays: true, rates: reporting.rates)
    }

    /// The range report in the reporting currency: money is converted per day, so a range divided
    /// by week or month also reads its figures per day (in the same snapshot) to convert them.
    static func convertedRange(
        _ range: ClosedRange<CalendarDate>, periods: [PeriodFigures], whole: PeriodFigures, options: ReportOptions,
        on connection: PostgresConnection
    ) async throws -> ConvertedFigures? {
        guard let reporting = options.reportingCurrency else { return nil }
        let days: [PeriodFigures]
        if periods.allSatisfy({ $0.period.first == $0.period.last }) {
            days = periods
        } else {
            let dates = (0...range.lowerBound.days(to: range.upperBound)).map { range.lowerBound.adding(days: $0) }
            let dayPeriods = try await RevenueQueries.periods(
                dates.map { $0...$0 }, timeZone: options.timeZone, on: connection)
            days = try await figures(dayPeriods, options: options, on: connection)
        }
        return try ConvertedFigures.make(
            days: days, periods: periods, whole: whole, trendIsDays: false, rates: reporting.rates)
    }
}
