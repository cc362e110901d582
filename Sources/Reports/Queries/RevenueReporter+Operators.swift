import CivilDates
import Ledger
import Postgres

extension RevenueReporter {
    /// Days the daily report reads through the report day cache, and fills it with: the day and the
    /// 89 before it (the 30- and 90-day figures; the 14-day trend is their last 14).
    public static let historyDays = 90
    /// The trailing windows the daily report compares the day with, in days ending on it.
    public static let trailingWindows = [7, 30, 90]

    /// The report of calendar month `month`: the range report of its first to last day, by day,
    /// written to the folder `YYYY-MM`.
    public func month(_ month: ReportMonth, options: ReportOptions = ReportOptions()) async throws -> RevenueReport {
        var report = try await range(from: month.first, through: month.last, by: .day, options: options)
        report.operators.month = month.description
        return report
    }

    /// The operator figures of a report over `periods` (the report's own, in one snapshot):
    /// storefronts per period and their sum, and for a daily report its trailing days.
    static func operatorFigures(
        periods: [ReportPeriod], trailing: [PeriodFigures] = [], options: ReportOptions,
        on connection: PostgresConnection
    ) async throws -> OperatorFigures {
        var figures = OperatorFigures()
        let window = ReportWindow(timeZone: options.timeZone, periods: periods)
        figures.storefronts = try StorefrontQueries.figures(
            try await StorefrontQueries.groups(window, on: connection), periods: periods.count,
            commission: options.commission)
        for period in figures.storefronts { try figures.wholeStorefronts.add(period) }
        figures.trailing = trailing
        figures.trailingTotals = try trailingTotals(trailing)
        return figures
    }

    /// The production totals per currency over the last 7, 30 and 90 of `days` (each a day, oldest
    /// first), summed (units and amounts add up; buyers do not, and are left at zero).
    static func trailingTotals(_ days: [PeriodFigures]) throws(ReportError) -> [TrailingTotals] {
        guard let last = days.last else { return [] }
        var windows: [TrailingTotals] = []
        for length in trailingWindows where length <= days.count {
            let span = days.suffix(length)
            var totals: [String: RevenueFigures] = [:]
            for day in span {
                for currency in day.currencies(in: LedgerBook.production) {
                    var line = day.total(book: LedgerBook.production, currency: currency)
                    line.buyers = 0
                    line.firstTimeBuyers = 0
                    try totals[currency, default: RevenueFigures()].addAmounts(of: line)
                }
            }
            windows.append(
                TrailingTotals(days: length, first: span.first!.period.first, last: last.period.first, totals: totals))
        }
        return windows
    }
}

/// A calendar month as `report month` takes it: `YYYY-MM`, years 1970 to 9000 (as the reports'
/// dates).
public struct ReportMonth: Sendable, Hashable, CustomStringConvertible {
    public let first: CalendarDate

    /// Parses `2026-11`; nil for anything else (`2026-13`, `2026-1`, `26-11`).
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 4, parts[1].count == 2,
            parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let year = Int(parts[0]), let month = Int(parts[1]), (1970...9000).contains(year),
            let first = CalendarDate(year: year, month: month, day: 1)
        else { return nil }
        self.first = first
    }

    /// The month's last day.
    public var last: CalendarDate { first.startOfNextMonth.adding(days: -1) }

    /// `2026-11`.
    public var description: String { String(first.description.prefix(7)) }
}
