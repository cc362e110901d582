import CivilDates
import Ledger
import Logging
import Postgres

/// Makes revenue reports from the ledger. Each report reads one REPEATABLE READ, read-only
/// snapshot, so its figures, refunds, watermark and reconciliation agree with each other even
/// while purchases keep arriving.
public struct RevenueReporter: Sendable {
    /// Days in the daily report's trend (the day and the 13 before it).
    public static let trendDays = 14
    /// The most periods a range report divides into.
    public static let maximumPeriods = 1000
    /// The longest range, in days.
    public static let maximumRangeDays = 3660

    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger = Logger(label: "shopledger.reports")) {
        self.client = client
        self.logger = logger
    }

    /// The daily report for `date` (default: yesterday in the report's time zone).
    public func daily(date: CalendarDate? = nil, options: ReportOptions = ReportOptions()) async throws -> RevenueReport
    {
        try Self.validate(options)
        await catchUpFirstPurchases()
        await fillDayCache(date: date, options: options)
        return try await client.withTransaction(.init(isolation: .repeatableRead, readOnly: true)) { connection in
            try await Self.prepare(connection, timeZone: options.timeZone)
            let periods = try await Self.trendPeriods(
                date: date, days: Self.historyDays, timeZone: options.timeZone, on: connection)
            let day = periods.last!.first
            let history = try await Self.figures(periods, byCachedDay: true, options: options, on: connection)
            let trend = Array(history.suffix(Self.trendDays))
            let dayWindow = ReportWindow(timeZone: options.timeZone, periods: [periods.last!])
            let refunds = try await RevenueQueries.refundLines(
                dayWindow, limit: options.refundListLimit, on: connection)
            let reconciliation = try await Self.reconcile(
                dayWindow, scope: "this day", options: options, on: connection)
            logger.debug("daily report", metadata: ["date": "\(day)", "zone": "\(options.timeZone)"])
            var report = try await RevenueReport(
                kind: .daily(day), options: options, periods: [trend.last!], whole: trend.last!, trend: trend,
                refunds: refunds, catalog: try await RevenueQueries.catalog(on: connection),
                dataAsOf: try await RevenueQueries.dataAsOf(on: connection), reconciliation: reconciliation,
                converted: try Self.convertedDaily(trend, options: options)
            ).addingAppleSays(on: connection)
            report.operators = try await Self.operatorFigures(
                periods: [periods.last!], trailing: history, options: options, on: connection)
            return report
        }
    }

    /// The report for `first...last`, divided by `grouping`.
    public func range(
        from first: CalendarDate, through last: CalendarDate, by grouping: ReportGrouping,
        options: ReportOptions = ReportOptions()
    ) async throws -> RevenueReport {
        try Self.validate(options)
        guard first <= last else { throw ReportError(.invalidInput, "--from \(first) is after --to \(last)") }
        guard first.days(to: last) < Self.maximumRangeDays else {
            throw ReportError(.invalidInput, "a range report covers at most \(Self.maximumRangeDays) days")
        }
        let ranges = grouping.periods(from: first, through: last)
        guard ranges.count <= Self.maximumPeriods else {
            throw ReportError(
                .invalidInput,
                "\(first) to \(last) by \(grouping.rawValue) is \(ranges.count) periods; at most \(Self.maximumPeriods) (group by week or month)"
            )
        }
        await catchUpFirstPurchases()
        return try await client.withTransaction(.init(isolation: .repeatableRead, readOnly: true)) { connection in
            try await Self.prepare(connection, timeZone: options.timeZone)
            let periods = try await RevenueQueries.periods(ranges, timeZone: options.timeZone, on: connection)
            let figures = try await Self.figures(periods, options: options, on: connection)
            let whole: PeriodFigures
            if periods.count == 1 {
                whole = figures[0]
            } else {
                let span = try await RevenueQueries.periods([first...last], timeZone: options.timeZone, on: connection)
                whole = try await Self.figures(span, options: options, on: connection)[0]
            }
            let window = ReportWindow(timeZone: options.timeZone, periods: periods)
            let reconciliation = try await Self.reconcile(window, scope: "this range", options: options, on: connection)
            let converted = try await Self.convertedRange(
                first...last, periods: figures, whole: whole, options: options, on: connection)
            var report = RevenueReport(
                kind: .range(first: first, last: last, grouping: grouping), options: options, periods: figures,
                whole: whole, trend: [], refunds: [], catalog: try await RevenueQueries.catalog(on: connection),
                dataAsOf: try await RevenueQueries.dataAsOf(on: connection), reconciliation: reconciliation,
                converted: converted)
            report.operators = try await Self.operatorFigures(periods: periods, options: options, on: connection)
            return report
        }
    }

    // MARK: Steps

    /// Folds recent purchases into `first_purchases` first, in a transaction of its own, so the
    /// report's snapshot has few to add; skipped on a standby or a read-only connection. The report
    /// is the same without it, only slower when the catch-up is far behind.
    func catchUpFirstPurchases() async {
        await FirstPurchaseCatchUp(client: client, invalidating: .reportDays, logger: logger).runLogged()
    }

    /// Stores the daily report's days (`historyDays`) the report day cache lacks (migration 0013), in a transaction of
    /// its own holding the catch-up's lock, on a primary; the report is the same without it, only
    /// slower. Skipped like the catch-up, and for a time zone the database does not know.
    func fillDayCache(date: CalendarDate?, options: ReportOptions) async {
        do {
            let outcome = try await FirstPurchaseCatchUp(client: client, invalidating: .reportDays, logger: logger)
                .whileLocked { connection in
                    try await connection.query("SET LOCAL work_mem = '64MB'")
                    guard try await RevenueQueries.isKnownTimeZone(options.timeZone, on: connection) else { return 0 }
                    let periods = try await Self.trendPeriods(
                        date: date, days: Self.historyDays, timeZone: options.timeZone, on: connection)
                    return try await ReportDayCache.fill(periods, timeZone: options.timeZone, on: connection)
                }
            if case .ran(let filled) = outcome, filled > 0 {
                logger.debug("report days cached", metadata: ["days": "\(filled)", "zone": "\(options.timeZone)"])
            }
        } catch {
            logger.warning("could not fill the report day cache", metadata: ["error": "\(error)"])
        }
    }

    /// The daily report's days: `date` (default yesterday in `timeZone`) and the `days - 1` before
    /// it, each a period.
    static func trendPeriods(
        date: CalendarDate?, days count: Int = trendDays, timeZone: String, on connection: PostgresConnection
    ) async throws -> [ReportPeriod] {
        let day: CalendarDate
        if let date {
            day = date
        } else {
            day = try await RevenueQueries.yesterday(in: timeZone, on: connection)
        }
        guard day.daysSinceEpoch - count >= CalendarDate(year: 1, month: 1, day: 1)!.daysSinceEpoch else {
            throw ReportError(.invalidInput, "\(day) is too early for a report")
        }
        let days = (0..<count).reversed().map { day.adding(days: -$0) }
        return try await RevenueQueries.periods(days.map { $0...$0 }, timeZone: timeZone, on: connection)
    }

    static func validate(_ options: ReportOptions) throws {
        guard (0...100_000).contains(options.refundListLimit) else {
            throw ReportError(.invalidInput, "the refund list limit must be between 0 and 100000")
        }
    }

    /// Lets the report's sorts and groupings stay in memory, then checks the time zone.
    static func prepare(_ connection: PostgresConnection, timeZone: String) async throws {
        try await connection.query("SET LOCAL work_mem = '64MB'")
        try await requireKnownTimeZone(timeZone, on: connection)
    }

    static func requireKnownTimeZone(_ name: String, on connection: PostgresConnection) async throws {
        guard name.utf8.count <= 64, try await RevenueQueries.isKnownTimeZone(name, on: connection) else {
            throw ReportError(
                .unknownTimeZone,
                "'\(name)' is not a time zone name the database knows; use an IANA name such as UTC, Asia/Seoul or America/Los_Angeles"
            )
        }
    }

    /// The figures of `periods` (three queries over their window). With `byCachedDay` (each period
    /// one day), the days the report day cache holds are read back instead of computed.
    static func figures(
        _ periods: [ReportPeriod], byCachedDay: Bool = false, options: ReportOptions,
        on connection: PostgresConnection
    ) async throws -> [PeriodFigures] {
        let window = ReportWindow(timeZone: options.timeZone, periods: periods)
        let entries: [EntryGroup]
        let buyers: [BuyerGroup]
        if byCachedDay {
            (entries, buyers) = try await ReportDayCache.groups(periods, timeZone: options.timeZone, on: connection)
        } else {
            entries = try await RevenueQueries.entryGroups(window, on: connection)
            buyers = try await RevenueQueries.buyerGroups(window, on: connection)
        }
        var figures = try RevenueAggregator(commission: options.commission).figures(
            periods: periods, entries: entries, buyers: buyers)
        SupportGrantQueries.add(try await SupportGrantQueries.groups(window, on: connection), to: &figures)
        return figures
    }

    /// The report's own check over its window, then (full) every ledger invariant and the report
    /// check over all of history, in this snapshot.
    static func reconcile(
        _ window: ReportWindow, scope: String, options: ReportOptions, on connection: PostgresConnection
    ) async throws -> [ReconciliationCheckResult] {
        var checks: [any ReconciliationCheck] = [ReportTotalsCheck(window: window, scope: scope)]
        if options.reconciliation == .full {
            checks += ReconciliationChecks.all
        }
        var results: [ReconciliationCheckResult] = []
        for check in checks { results.append(try await check.run(on: connection, failureLimit: 20)) }
        return results
    }
}
