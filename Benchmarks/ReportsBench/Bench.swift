import CivilDates
import Foundation
import Ledger
import Logging
import Postgres
import Reports
import Seeding

/// Seeds N purchases (through COPY) into a durable private cluster (fsync on) and times the daily
/// report over them: seeding, VACUUM ANALYZE, then the report for the last seeded day (cold, then
/// the median of warm runs), the range report for its month, and EXPLAIN (ANALYZE, BUFFERS) of the
/// report's period query so the plan shows its index range scan; then the reconciler over the whole
/// ledger (`shopledger reconcile`'s checks), timed, and each check timed alone.
///
///     ReportsBench [purchases] [days] [--keep DIR] [--runs K] [--parallel P] [--no-reconcile]
///
/// Defaults: 1,000,000 purchases over 365 days. With `--keep DIR` the cluster lives in DIR and is
/// left there (seeded once, reused on the next run with the same DIR); `--runs K` sets how many warm
/// daily reports are timed after the first (default 9); `--parallel P` how many seed batches are
/// copied at once (default 2); `--no-reconcile` leaves the reconciler out (minutes at 10M purchases).
/// A kept cluster whose seed was interrupted is topped up.
@main
struct Bench {
    static func main() async throws {
        var arguments = Array(CommandLine.arguments.dropFirst())
        var keep: String?
        if let index = arguments.firstIndex(of: "--keep"), index + 1 < arguments.count {
            keep = arguments[index + 1]
            arguments.removeSubrange(index...(index + 1))
        }
        let reconciles = !arguments.contains("--no-reconcile")
        arguments.removeAll { $0 == "--no-reconcile" }
        var parallelBatches = 2
        if let index = arguments.firstIndex(of: "--parallel"), index + 1 < arguments.count,
            let count = Int(arguments[index + 1]), (1...8).contains(count)
        {
            parallelBatches = count
            arguments.removeSubrange(index...(index + 1))
        }
        var warmRuns = 9
        if let index = arguments.firstIndex(of: "--runs"), index + 1 < arguments.count,
            let runs = Int(arguments[index + 1]), runs > 0
        {
            warmRuns = runs
            arguments.removeSubrange(index...(index + 1))
        }
        let purchases = arguments.first.flatMap(Int.init) ?? 1_000_000
        let days = arguments.dropFirst().first.flatMap(Int.init) ?? 365
        var logger = Logger(label: "bench")
        logger.logLevel = .warning
        var progress = Logger(label: "bench.seed")
        progress.logLevel = .info

        let folder = keep ?? "/tmp/shopledger-reports-bench-\(ProcessInfo.processInfo.processIdentifier)"
        let cluster = try LocalPostgres(
            options: .init(
                dataDirectory: folder + "/data", port: 55_400 + Int(ProcessInfo.processInfo.processIdentifier % 400),
                durable: true,
                settings: ["shared_buffers": "1GB", "max_wal_size": "8GB", "checkpoint_timeout": "30min"]),
            logger: logger)
        let running = try await cluster.start()
        defer { if keep == nil { try? FileManager.default.removeItem(atPath: folder) } }
        let admin = PostgresClient(
            configuration: .init(
                connection: .init(url: running.url(database: "postgres")), minimumConnections: 0, maximumConnections: 1),
            logger: logger)
        let exists = try await admin.query("SELECT 1 FROM pg_database WHERE datname = 'bench'").count > 0
        if !exists { try await admin.query("CREATE DATABASE bench") }
        let settings = try await admin.query(
            "SELECT current_setting('fsync'), current_setting('synchronous_commit'), current_setting('shared_buffers'), version()"
        ).single()
        say("server: \(try settings.decode((String, String, String, String).self))")
        await admin.shutdown()

        let client = PostgresClient(
            configuration: .init(
                connection: .init(url: running.url(database: "bench")), minimumConnections: 1, maximumConnections: 10),
            logger: logger)
        let clock = ContinuousClock()
        // A kept cluster seeded by an older build is migrated here: 0011 fills first_purchases.
        let migrationBegan = clock.now
        let applied = try await LedgerSchema.migrator(logger: logger).migrate(client)
        if !applied.isEmpty {
            say("migrate: \(applied.joined(separator: ", ")) in \(ms(clock.now - migrationBegan)) ms")
        }
        let lastDay = CalendarDate(year: 2025, month: 6, day: 30)!
        let seeded = try await client.query("SELECT count(*) FROM purchases").single().decode(Int.self, at: 0)
        if seeded < purchases {
            // An interrupted seed (each batch is all or nothing) is topped up with a second seed.
            let topUp = seeded > 0
            var configuration = SeedConfiguration(
                purchases: purchases - seeded, days: days,
                users: topUp ? SeedConfiguration.minimumUsers(for: purchases - seeded) : nil, lastDay: lastDay,
                seed: topUp ? 2 : 1)
            configuration.parallelBatches = parallelBatches
            if topUp { say("topping up \(seeded) seeded purchases with \(configuration.purchases) more (seed 2)") }
            let seeder = LedgerSeeder(client: client, invalidating: .reportDays, logger: progress)
            let began = clock.now
            let summary = try await seeder.seed(configuration)
            let seedTime = clock.now - began
            say(
                "seed: \(summary.purchases) purchases, \(summary.refunds) refunds, \(summary.users) users, "
                    + "\(summary.journalEntries) journal entries over \(days) days in \(seconds(seedTime)) s "
                    + "(\(Int(Double(summary.purchases) / max(0.001, seconds(seedTime)))) purchases/s, "
                    + "\(parallelBatches) batches in flight)")
            let vacuumBegan = clock.now
            try await seeder.vacuum()
            say("vacuum analyze: \(seconds(clock.now - vacuumBegan)) s")
        } else {
            say("reusing \(seeded) seeded purchases in \(folder)")
        }
        let sizes = try await client.query(
            "SELECT pg_size_pretty(pg_database_size('bench')), (SELECT count(*) FROM journal_entries), (SELECT count(*) FROM postings)"
        ).single().decode((String, Int, Int).self)
        say("database: \(sizes.0), \(sizes.1) journal entries, \(sizes.2) postings")

        let reporter = RevenueReporter(client: client, logger: logger)
        let output = folder + "/reports"
        func dailyReport() async throws -> (Duration, RevenueReport) {
            let began = clock.now
            let report = try await reporter.daily(date: lastDay, options: ReportOptions(timeZone: "Asia/Seoul"))
            _ = try ReportWriter(outputDirectory: output, logger: logger).write(report, formats: ReportFormat.allCases)
            return (clock.now - began, report)
        }
        // The first report fills the report day cache's days it lacks (0013); the others read them.
        func cachedDays() async throws -> Int {
            try await client.query("SELECT count(*) FROM report_days").single().decode(Int.self, at: 0)
        }
        let cachedBefore = try await cachedDays()
        let (cold, report) = try await dailyReport()
        say("report day cache: \(cachedBefore) days before the first report, \(try await cachedDays()) after")
        var warm: [Duration] = []
        for _ in 0..<warmRuns { warm.append(try await dailyReport().0) }
        warm.sort()
        let production = report.whole.total(book: LedgerBook.production, currency: "KRW")
        say(
            "daily report \(lastDay) Asia/Seoul (queries + CSV + Markdown + atomic writes): first \(ms(cold)) ms, "
                + "median of \(warmRuns) \(ms(warm[warmRuns / 2])) ms, min \(ms(warm[0])) ms, max \(ms(warm[warmRuns - 1])) ms; "
                + "the day: \(production.purchases) KRW purchases, \(production.refunds) refunds, reconciled \(report.reconciled)"
        )

        let rangeBegan = clock.now
        let month = try await reporter.range(
            from: CalendarDate(year: 2025, month: 6, day: 1)!, through: lastDay, by: .day,
            options: ReportOptions(timeZone: "Asia/Seoul"))
        _ = try ReportWriter(outputDirectory: output, logger: logger).write(month, formats: ReportFormat.allCases)
        say("range report 2025-06-01 to \(lastDay) by day: \(ms(clock.now - rangeBegan)) ms")

        // `shopledger reconcile` over the whole ledger: the other read the lean write path must not slow.
        if reconciles {
            let reconcileBegan = clock.now
            let reconciliation = try await Reconciler(client: client).run()
            say(
                "reconcile (every check over the whole ledger): \(ms(clock.now - reconcileBegan)) ms, "
                    + "passed \(reconciliation.passed), \(reconciliation.checks.count) checks")
            // Where that time goes: each check again, timed alone, in one snapshot as the reconciler runs them.
            let checkTimes = try await client.withTransaction(.init(isolation: .repeatableRead, readOnly: true)) {
                connection in
                var times: [(name: String, time: Duration, passed: Bool)] = []
                for check in LedgerInvariants.all {
                    let began = clock.now
                    let result = try await check.run(on: connection, failureLimit: 50)
                    times.append((check.name, clock.now - began, result.passed))
                }
                return times
            }
            for check in checkTimes {
                say("  check \(check.name): \(ms(check.time)) ms\(check.passed ? "" : " (FAILED)")")
            }
        }

        // The plans of the report's own queries: index scans on purchases_by_purchased_at (BRIN) and journal_entry_rows_by_effective_at.
        for (label, plan) in try await reporter.explainDaily(
            date: lastDay, options: ReportOptions(timeZone: "Asia/Seoul"))
        {
            say("EXPLAIN \(label):")
            for line in plan { say("    " + line) }
        }
        await client.shutdown()
        try await cluster.stop()
        say("report files in \(output)\(keep == nil ? " (removed with the cluster)" : "")")
    }

    /// One line to standard output, written at once (not held in a buffer when output is a file,
    /// so a long seed shows its progress).
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func ms(_ duration: Duration) -> String { String(format: "%.1f", seconds(duration) * 1000) }
}
