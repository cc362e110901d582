import CivilDates
import Ledger
import Postgres

extension RevenueReporter {
    /// The plans of the daily report's period queries, as `EXPLAIN (ANALYZE, BUFFERS)` prints them
    /// when run with the report's own SQL and parameters: each should read its period by index range
    /// scans (`purchases_by_purchased_at`, a BRIN index, and `journal_entry_rows_by_effective_at`),
    /// however long the history.
    public func explainDaily(
        date: CalendarDate, options: ReportOptions = ReportOptions()
    ) async throws -> [(query: String, plan: [String])] {
        try await client.withTransaction(.init(isolation: .repeatableRead, readOnly: true)) { connection in
            try await Self.prepare(connection, timeZone: options.timeZone)
            let days = (0..<Self.trendDays).reversed().map { date.adding(days: -$0) }
            let periods = try await RevenueQueries.periods(
                days.map { $0...$0 }, timeZone: options.timeZone, on: connection)
            let trend = ReportWindow(timeZone: options.timeZone, periods: periods)
            let day = ReportWindow(timeZone: options.timeZone, periods: [periods.last!])
            let queries: [(String, PostgresQuery)] = [
                ("entries per period (14 days)", RevenueQueries.entryGroupsQuery(trend)),
                (
                    "buyers per period (14 days)",
                    RevenueQueries.buyerGroupsQuery(
                        trend, since: try await FirstPurchaseSQL.since(on: connection))
                ),
                (
                    "the cached days changed since the watermark (14 days)",
                    ReportDayCache.touchedDaysQuery(
                        days, timeZone: options.timeZone, since: try await FirstPurchaseSQL.since(on: connection))
                ),
                ("the day's refunds", RevenueQueries.refundLinesQuery(day, limit: options.refundListLimit)),
                ("the day's revenue per storefront", StorefrontQueries.query(day)),
                ("the day's revenue postings (reconciliation)", RevenueQueries.revenuePostingsQuery(day)),
            ]
            var plans: [(query: String, plan: [String])] = []
            for (label, query) in queries {
                let explain = PostgresQuery(
                    unsafeSQL: "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + query.sql, binds: query.binds)
                plans.append((label, try await connection.query(explain).map { try $0.decode(String.self, at: 0) }))
            }
            return plans
        }
    }
}
