import BenchSupport
import Foundation
import Ledger
import Logging
import Postgres
import Receipts

/// The lean write path (migration 0007) against the schema before it, in the same run on the same
/// cluster: one database migrated up to migration 5 and driven with that schema's purchase
/// statement (`Schema5`), one with every migration and the ledger's current statement, both by
/// `pgbench -M prepared` at the same concurrency, in alternating rounds. For each: new purchases
/// per second, PostgreSQL's CPU per purchase (all server processes, from /proc, so other load on
/// the machine does not count) and WAL bytes per purchase (pg_current_wal_lsn before and after).
enum SchemaComparison {
    struct Result {
        var purchases = 0
        var seconds = 0.0
        var serverCPU = 0.0
        var walBytes = 0.0
        var failed = 0
        var perSecond: Double { seconds > 0 ? Double(purchases) / seconds : 0 }
        var cpuMicros: Double { serverCPU * 1e6 / Double(max(purchases, 1)) }
        var walPerPurchase: Double { walBytes / Double(max(purchases, 1)) }
    }

    static func run(
        running: LocalPostgres.Running, folder: String, seconds: Double, rounds: Int, clients: [Int],
        products: [String], uids: ClosedRange<Int>, logger: Logger
    ) async throws {
        let admin = PostgresClient(
            configuration: .init(
                connection: .init(url: running.url(database: "postgres")), minimumConnections: 0, maximumConnections: 1),
            logger: logger)
        for name in ["before_lean", "after_lean"] {
            try await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"))
            try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
        }
        let profile = try UserProfile(json: #"{"nick":"bench"}"#)
        var cases: [(label: String, database: String, statement: PurchaseStatement)] = []
        for (label, database, upTo) in [
            ("schema 1–\(Schema5.lastMigration), its statement", "before_lean", Optional(Schema5.lastMigration)),
            ("schema with 0007 (lean), the ledger's statement", "after_lean", nil),
        ] {
            let client = PostgresClient(
                configuration: .init(
                    connection: .init(url: running.url(database: database)), minimumConnections: 0,
                    maximumConnections: 2),
                logger: logger)
            try await LedgerSchema.migrator(logger: logger).migrate(client, upTo: upTo)
            // Registration writes the same rows in both schemas' tables up to 0005; in the lean one
            // through the ledger itself.
            if upTo == nil {
                let ledger = LedgerStore(client: client, logger: logger)
                for uid in uids { _ = try await ledger.register(uid: String(uid), profile: profile) }
            } else {
                try await client.query(
                    """
                    WITH account AS (
                        INSERT INTO users (uid, profile)
                        SELECT g::text, '{"nick":"bench"}'::jsonb FROM generate_series(\(uids.lowerBound), \(uids.upperBound)) g
                        RETURNING uid
                    ),
                    free AS (
                        INSERT INTO grants (uid, item_kind, item_index, free)
                        SELECT a.uid, c.kind, c.item_index, true FROM account a, catalog_items c WHERE c.item_index = 0
                        RETURNING uid, item_kind, item_index
                    )
                    INSERT INTO grant_events (uid, item_kind, item_index, source, delta, cause)
                    SELECT uid, item_kind, item_index, 'free', 1, 'register' FROM free
                    """)
            }
            await client.shutdown()
            let transaction = benchTransaction("capture-\(database)", product: products[1])
            let statement =
                upTo == nil
                ? try PurchaseStatement(transaction: transaction, uid: String(uids.lowerBound))
                : try PurchaseStatement(
                    query: Schema5.newPurchaseStatement(transaction, for: String(uids.lowerBound)),
                    transaction: transaction, uid: String(uids.lowerBound))
            cases.append((label, database, statement))
        }
        await admin.shutdown()

        let sampler = PostgresClient(
            configuration: .init(
                connection: .init(url: running.url(database: "postgres")), minimumConnections: 0, maximumConnections: 1),
            logger: logger)
        let load = ServerLoad(client: sampler, dataDirectory: folder + "/data")
        func walPosition() async throws -> Double {
            try await sampler.query("SELECT (pg_current_wal_lsn() - '0/0')::float8").single().decode(Double.self, at: 0)
        }
        print(
            "before/after the lean write path (pgbench -M prepared, \(rounds) alternating rounds × \(Int(seconds)) s per case; "
                + "CPU = all PostgreSQL processes)")
        for (label, _, statement) in cases {
            print("  \(label): \(statement.sql.utf8.count) bytes, \(statement.parameters.count) parameters")
        }
        var results: [String: [Int: Result]] = [:]
        var base = 7_000_000_000_000
        for round in 1...rounds {
            for clients in clients {
                for (label, database, statement) in cases {
                    guard
                        let pgbench = Pgbench(
                            socketDirectory: running.socketDirectory, port: running.port, user: running.superuser,
                            database: database, folder: folder)
                    else { throw BenchError("pgbench not found") }
                    base += 1_000_000_000_000
                    let (scripts, defines) = statement.pgbenchScripts(products: products, uids: uids, base: base)
                    // Warm-up: past the custom plans, so both run their generic plan.
                    if round == 1 {
                        _ = try await pgbench.run(
                            scripts: scripts, defines: defines, clients: clients, seconds: 2, logLatencies: false)
                        base += 1_000_000_000_000
                    }
                    let (scripts2, defines2) = statement.pgbenchScripts(products: products, uids: uids, base: base)
                    let start = try await load.sample()
                    let wal = try await walPosition()
                    let began = ContinuousClock.now
                    let result = try await pgbench.run(
                        scripts: scripts2, defines: defines2, clients: clients, seconds: Int(seconds.rounded(.up)),
                        logLatencies: false)
                    let elapsed = ContinuousClock.now - began
                    let usage = ServerLoad.usage(from: start, to: try await load.sample())
                    let walBytes = try await walPosition() - wal
                    var sum = results[label, default: [:]][clients, default: Result()]
                    sum.purchases += result.transactions
                    sum.seconds += Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                    sum.serverCPU += usage.server
                    sum.walBytes += walBytes
                    sum.failed += result.failed
                    results[label, default: [:]][clients] = sum
                    print(
                        String(
                            format:
                                "  round %d, %d clients, %@: %d purchases, %.0f/s (pgbench %.0f tps), CPU %.0f µs/purchase, WAL %.0f B/purchase",
                            round, clients, label, result.transactions,
                            Double(result.transactions)
                                / max(
                                    Double(elapsed.components.seconds), 1), result.perSecond,
                            usage.server * 1e6 / Double(max(result.transactions, 1)),
                            walBytes / Double(max(result.transactions, 1))))
                }
            }
        }
        // Group commit, through the ledger itself (pgbench cannot build the batch's arrays): the
        // lean schema's recordPurchase alone per purchase and with group commit, same clients.
        let ledgerClient = PostgresClient(
            configuration: .init(
                connection: .init(url: running.url(database: "after_lean"), preparedStatementCacheSize: 128),
                minimumConnections: 16, maximumConnections: 16), logger: logger)
        let counter = Counter()
        let ledgerCases: [(String, GroupCommit)] = [
            ("ledger, lean, each purchase alone", .off), ("ledger, lean, group commit (≤32)", GroupCommit()),
        ]
        var ledgerResults: [String: [Int: Result]] = [:]
        for round in 1...rounds {
            for clients in clients.map({ $0 * 2 }) {
                for (label, groupCommit) in ledgerCases {
                    let ledger = LedgerStore(client: ledgerClient, logger: logger, groupCommit: groupCommit)
                    if round == 1 {
                        _ = try await Measurement.drive("warm-up", clients: clients, seconds: 2) { _, _ in
                            _ = try await ledger.recordPurchase(
                                benchTransaction("gw\(counter.next())", product: products.randomElement()!),
                                for: String(Int.random(in: uids)))
                        }
                    }
                    let start = try await load.sample()
                    let wal = try await walPosition()
                    let measurement = try await Measurement.drive(label, clients: clients, seconds: seconds) { _, _ in
                        let outcome = try await ledger.recordPurchase(
                            benchTransaction("g\(counter.next())", product: products.randomElement()!),
                            for: String(Int.random(in: uids)))
                        guard case .recorded = outcome else { throw BenchError("unexpected \(outcome)") }
                    }
                    let usage = ServerLoad.usage(from: start, to: try await load.sample())
                    let walBytes = try await walPosition() - wal
                    var sum = ledgerResults[label, default: [:]][clients, default: Result()]
                    sum.purchases += measurement.calls
                    sum.seconds += Double(measurement.calls) / max(measurement.perSecond, 1)
                    sum.serverCPU += usage.server
                    sum.walBytes += walBytes
                    ledgerResults[label, default: [:]][clients] = sum
                    print(
                        String(
                            format:
                                "  round %d, %d clients, %@: %d purchases, %.0f/s, p50 %.2f ms, p99 %.2f ms, CPU %.0f µs/purchase, WAL %.0f B/purchase",
                            round, clients, label, measurement.calls, measurement.perSecond,
                            measurement.percentile(0.5), measurement.percentile(0.99),
                            usage.server * 1e6 / Double(max(measurement.calls, 1)),
                            walBytes / Double(max(measurement.calls, 1))))
                }
            }
        }
        await ledgerClient.shutdown()
        await sampler.shutdown()
        for (label, byClients) in ledgerResults {
            for (clients, result) in byClients { results[label, default: [:]][clients] = result }
        }
        cases += ledgerCases.map { ($0.0, "after_lean", cases[1].statement) }

        print("\n## The lean write path: new priced purchases, before and after (sums over \(rounds) rounds)\n")
        print(
            "| clients | schema | purchases/s (pgbench) | PostgreSQL CPU µs per purchase | WAL bytes per purchase | ceiling on 2 cores, CPU only |"
        )
        print("|---|---|---|---|---|---|")
        for clients in Set(clients + clients.map { $0 * 2 }).sorted() {
            for (label, _, _) in cases {
                guard let r = results[label]?[clients] else { continue }
                print(
                    String(
                        format: "| %d | %@ | %.0f | %.0f | %.0f | %.0f/s |", clients, label, r.perSecond, r.cpuMicros,
                        r.walPerPurchase, 2e6 / max(r.cpuMicros, 1)))
            }
            if let before = results[cases[0].label]?[clients], let after = results[cases[1].label]?[clients] {
                print(
                    String(
                        format: "| %d | after ÷ before | %.2f× | %.2f× less | %.2f× less | |", clients,
                        after.perSecond / max(before.perSecond, 1), before.cpuMicros / max(after.cpuMicros, 1),
                        before.walPerPurchase / max(after.walPerPurchase, 1)))
            }
        }
        print()
    }
}
