import BenchSupport
import Foundation
import Ledger
import Logging
import Postgres
import Receipts

/// Measures `LedgerStore.recordPurchase` against a durable private cluster (fsync on,
/// synchronous_commit on; run the release build) beside the database ceiling: the exact statement a
/// new purchase sends, driven by `pgbench -M prepared` at the same concurrency on the same cluster
/// in the same run. Our path runs twice, with the prepared-statement cache off (every call parsed
/// and planned: the old behaviour) and on. Also: the server's time per phase, plan_cache_mode,
/// duplicates, statements per call, and whether CPU or WAL flushing is the limit.
///
/// Usage: LedgerBench [seconds-per-case, default 10] [rounds, default 2]
@main
struct Bench {
    static let products = (1...4).map { "com.memolease.sesac1.sprout\($0)" }
    static let uids = 100_000...100_999

    static func main() async throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let seconds = arguments.first.flatMap(Double.init) ?? 10
        let rounds = arguments.dropFirst().first.flatMap(Int.init) ?? 2
        var logger = Logger(label: "bench")
        logger.logLevel = .warning
        let pid = ProcessInfo.processInfo.processIdentifier
        let folder = "/tmp/shopledger-ledger-bench-\(pid)"
        let log = folder + "/data.log"
        let cluster = try LocalPostgres(
            options: .init(dataDirectory: folder + "/data", port: 55_000 + Int(pid % 400), durable: true),
            logger: logger)
        let running = try await cluster.start()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        do {
            try await run(running: running, folder: folder, log: log, seconds: seconds, rounds: rounds, logger: logger)
        } catch {
            print("benchmark failed: \(error)")
        }
        try await cluster.stop()
    }

    static func run(
        running: LocalPostgres.Running, folder: String, log: String, seconds: Double, rounds: Int, logger: Logger
    ) async throws {
        let admin = PostgresClient(
            configuration: .init(
                connection: .init(url: running.url(database: "postgres")), minimumConnections: 0, maximumConnections: 1),
            logger: logger)
        try await admin.query("DROP DATABASE IF EXISTS bench WITH (FORCE)")
        try await admin.query("CREATE DATABASE bench")
        let settings = try await admin.query(
            "SELECT current_setting('fsync'), current_setting('synchronous_commit'), current_setting('plan_cache_mode'), version()"
        ).single()
        print("server:", try settings.decode((String, String, String, String).self))

        // Time each WAL flush (pg_stat_wal.wal_sync_time): is the commit's fsync the limit?
        try await admin.query("ALTER SYSTEM SET track_wal_io_timing = on")
        try await admin.query("SELECT pg_reload_conf()")
        await admin.shutdown()

        let url = running.url(database: "bench")
        func makeClient(cache: Int) -> PostgresClient {
            PostgresClient(
                configuration: .init(
                    connection: .init(url: url, preparedStatementCacheSize: cache), minimumConnections: 16,
                    maximumConnections: 16), logger: logger)
        }
        let unnamedClient = makeClient(cache: 0)
        let preparedClient = makeClient(cache: 128)
        try await LedgerSchema.migrator(logger: logger).migrate(preparedClient)
        let unnamed = LedgerStore(client: unnamedClient, logger: logger)
        let prepared = LedgerStore(client: preparedClient, logger: logger)
        let profile = try UserProfile(json: #"{"nick":"bench"}"#)
        for uid in uids { _ = try await prepared.register(uid: String(uid), profile: profile) }
        let load = ServerLoad(client: preparedClient, dataDirectory: folder + "/data")

        let counter = Counter()
        @Sendable func transaction(_ id: String, product: String? = nil) -> VerifiedTransaction {
            benchTransaction(id, product: product ?? products.randomElement()!)
        }
        @Sendable func randomUID() -> String { String(Int.random(in: uids)) }

        // Warm-up: every connection of both pools, past PostgreSQL's five custom plans.
        for ledger in [unnamed, prepared] {
            _ = try await Measurement.drive("warm-up", clients: 16, callsEach: 20) { _, _ in
                _ = try await ledger.recordPurchase(transaction("w\(counter.next())"), for: randomUID())
            }
        }

        let statement = try PurchaseStatement(
            transaction: transaction("capture-\(counter.next())", product: products[1]), uid: "100001")
        print(
            "purchase statement: \(statement.sql.utf8.count) bytes, \(statement.parameters.count) parameters, from the ledger"
        )
        guard
            let pgbench = Pgbench(
                socketDirectory: running.socketDirectory, port: running.port, user: running.superuser,
                database: "bench", folder: folder)
        else {
            throw BenchError("pgbench not found")
        }
        let pgbenchBase = Counter()
        func runPgbench(_ label: String, clients: Int, options: String = "") async throws -> Measurement {
            let (scripts, defines) = statement.pgbenchScripts(
                products: products, uids: uids, base: 1_000_000_000_000 * (1 + pgbenchBase.next()))
            let start = try await load.sample()
            let result = try await pgbench.run(
                scripts: scripts, defines: defines, clients: clients, seconds: Int(seconds.rounded(.up)),
                options: options)
            var measurement = Measurement(
                label: label, clients: clients, calls: result.transactions, perSecond: result.perSecond,
                latencies: result.latencies)
            measurement.usage = ServerLoad.usage(from: start, to: try await load.sample())
            if result.failed > 0 { print("  pgbench: \(result.failed) failed transactions") }
            return measurement
        }
        func runOurs(_ label: String, _ ledger: LedgerStore, clients: Int) async throws -> Measurement {
            let start = try await load.sample()
            var measurement = try await Measurement.drive(label, clients: clients, seconds: seconds) { _, _ in
                let outcome = try await ledger.recordPurchase(transaction("t\(counter.next())"), for: randomUID())
                guard case .recorded = outcome else { throw BenchError("unexpected \(outcome)") }
            }
            measurement.usage = ServerLoad.usage(from: start, to: try await load.sample())
            return measurement
        }
        func runRaw(clients: Int) async throws -> Measurement {
            let start = try await load.sample()
            var measurement = try await Measurement.drive("module, raw statement", clients: clients, seconds: seconds) {
                _, _ in
                try await preparedClient.query(
                    statement.query(
                        transactionId: "m\(counter.next())", uid: randomUID(), product: products.randomElement()!))
            }
            measurement.usage = ServerLoad.usage(from: start, to: try await load.sample())
            return measurement
        }

        // Baseline: one trivial query's round trip through the wrapper.
        do {
            let start = ContinuousClock.now
            for _ in 0..<3000 { _ = try await preparedClient.query("SELECT 1") }
            print("SELECT 1 baseline, 1 caller: \((ContinuousClock.now - start) / 3000) per query")
        }

        try await ServerPhases.report(log: log, admin: preparedClient) {
            for (label, ledger) in [("unnamed", unnamed), ("prepared", prepared)] {
                let before = ServerPhases.logSize(log)
                for _ in 0..<300 {
                    _ = try await ledger.recordPurchase(transaction("x\(counter.next())"), for: randomUID())
                }
                print(ServerPhases.summary(label, log: log, from: before))
            }
        }

        var results: [String: [Int: [Measurement]]] = [:]
        func record(_ measurement: Measurement) {
            print("  " + measurement.line)
            results[measurement.label, default: [:]][measurement.clients, default: []].append(measurement)
        }
        for round in 1...rounds {
            print("round \(round)")
            for clients in [1, 8, 16] {
                record(try await runOurs("recordPurchase, unnamed", unnamed, clients: clients))
                record(try await runOurs("recordPurchase, prepared", prepared, clients: clients))
                record(try await runRaw(clients: clients))
                record(try await runPgbench("pgbench -M prepared", clients: clients))
            }
        }

        print("duplicates (the statement, then a read of the stored row)")
        for clients in [1, 8] {
            let ids = (0..<clients).map { _ in (0..<(3000 / clients)).map { _ in "d\(counter.next())" } }
            _ = try await Measurement.drive("record", clients: clients, callsEach: ids[0].count) { client, index in
                _ = try await prepared.recordPurchase(
                    transaction(ids[client][index], product: products[0]), for: "100002")
            }
            for (label, ledger) in [("duplicates, unnamed", unnamed), ("duplicates, prepared", prepared)] {
                record(
                    try await Measurement.drive(label, clients: clients, callsEach: ids[0].count) { client, index in
                        let outcome = try await ledger.recordPurchase(
                            transaction(ids[client][index], product: products[0]), for: "100002")
                        guard case .duplicate = outcome else { throw BenchError("unexpected \(outcome)") }
                    })
            }
        }

        print("plan_cache_mode, 8 clients (auto: generic plan after 5 executions when not costlier)")
        for mode in ["force_custom_plan", "force_generic_plan", "auto"] {
            try await preparedClient.query(PostgresQuery(unsafeSQL: "ALTER SYSTEM SET plan_cache_mode = \(mode)"))
            try await preparedClient.query("SELECT pg_reload_conf()")
            try await Task.sleep(for: .milliseconds(300))
            record(try await runOurs("recordPurchase, prepared, \(mode)", prepared, clients: 8))
            record(try await runPgbench("pgbench -M prepared, \(mode)", clients: 8))
        }
        try await preparedClient.query("ALTER SYSTEM RESET plan_cache_mode")
        try await preparedClient.query("SELECT pg_reload_conf()")

        print("diagnostic only: is the WAL flush the limit? pgbench with synchronous_commit=off for its sessions")
        for clients in [8, 16] {
            record(
                try await runPgbench(
                    "pgbench -M prepared, synchronous_commit=off", clients: clients,
                    options: "-c synchronous_commit=off"))
        }

        try await ServerPhases.explain(statement, client: preparedClient)
        try await ServerPhases.statementsPerCall(
            log: log, client: preparedClient, ledger: prepared, transaction: { transaction($0, product: products[0]) },
            counter: counter)

        let began = ContinuousClock.now
        let report = try await Reconciler(client: preparedClient).run()
        print(
            "reconcile on \(try await preparedClient.query("SELECT count(*) FROM purchases").single().decode(Int.self, at: 0)) purchases: passed \(report.passed) in \(ContinuousClock.now - began)"
        )
        if !report.passed { print(report.text) }

        Summary.print(results, seconds: seconds, rounds: rounds)
        await unnamedClient.shutdown()
        await preparedClient.shutdown()
    }
}
