import BenchSupport
import Foundation
import Ledger
import Postgres

/// The database ceiling, measured in the same run on the same cluster and database once the HTTP
/// workloads are done and the server is stopped: the exact statement a new purchase sends (read back
/// from the server, as LedgerBench does), driven by PostgreSQL's `pgbench -M prepared` with as many
/// clients as the server has pool connections. End-to-end purchases per second are quoted as a share
/// of this. The same for myinfo's one read (`LedgerStore.accountSummary`), over myinfo's readers.
enum Ceiling {
    struct Results: Sendable {
        let purchase: Pgbench.Result
        let myinfo: Pgbench.Result
        /// A bare two-insert transaction: about the least a durable purchase could cost this cluster.
        let floor: Pgbench.Result
    }

    static let uids = 100_000...100_999

    static func measure(
        server: BenchServer, clients: Int, seconds: Double, products: [String], users: Int
    ) async throws -> Results {
        let client = PostgresClient(
            configuration: .init(
                connection: .init(url: server.databaseURL), minimumConnections: 0, maximumConnections: 4))
        do {
            let purchase = try await measure(
                server: server, client: client, clients: clients, seconds: seconds, products: products)
            let myinfo = try await measureMyinfo(
                server: server, clients: clients, seconds: seconds, users: users)
            let floor = try await measureFloor(server: server, client: client, clients: clients, seconds: seconds)
            await client.shutdown()
            return Results(purchase: purchase, myinfo: myinfo, floor: floor)
        } catch {
            await client.shutdown()
            throw error
        }
    }

    private static func measure(
        server: BenchServer, client: PostgresClient, clients: Int, seconds: Double, products: [String]
    ) async throws -> Pgbench.Result {
        // pgbench picks users by number; register them (the HTTP workloads' users are u0…).
        let ledger = LedgerStore(client: client)
        let profile = try UserProfile(json: #"{"nick":"ceiling"}"#)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<4 {
                group.addTask {
                    for uid in uids where uid % 4 == lane {
                        _ = try await ledger.register(uid: String(uid), profile: profile)
                    }
                }
            }
            try await group.waitForAll()
        }
        let statement = try PurchaseStatement(
            transaction: benchTransaction("ceiling-capture", product: products[1]), uid: String(uids.lowerBound))
        let pgbench = try Self.pgbench(server)
        func run(base: Int, seconds: Double) async throws -> Pgbench.Result {
            let (scripts, defines) = statement.pgbenchScripts(
                products: products, uids: uids, base: 1_000_000_000_000 * base)
            return try await pgbench.run(
                scripts: scripts, defines: defines, clients: clients, seconds: Int(seconds.rounded(.up)))
        }
        // A second's warm-up (every connection past PostgreSQL's five custom plans), then the run.
        _ = try await run(base: 1, seconds: 1)
        return try await run(base: 2, seconds: seconds)
    }

    /// The floor new purchases are quoted against (issue 44's yardstick): a transaction of two bare inserts
    /// (BEGIN, a purchase row, one row of its entry, COMMIT; no index but the keys, no trigger, no check),
    /// each call with new keys, over the same clients, on the same cluster. What lies between it and an
    /// end-to-end purchase is ours. (No `:` in its literals: pgbench reads `:name` as a
    /// variable even inside quotes.)
    private static func measureFloor(
        server: BenchServer, client: PostgresClient, clients: Int, seconds: Double
    ) async throws -> Pgbench.Result {
        try await client.execute(
            """
            CREATE TABLE IF NOT EXISTS bench_floor_purchases (
                transaction_id text PRIMARY KEY, uid text NOT NULL, product_id text NOT NULL,
                price_milli bigint NOT NULL, recorded_at timestamptz NOT NULL DEFAULT now())
            """)
        try await client.execute(
            """
            CREATE TABLE IF NOT EXISTS bench_floor_entries (
                transaction_id text PRIMARY KEY, account text NOT NULL, amount_milli bigint NOT NULL)
            """)
        let pgbench = try Self.pgbench(server)
        let script = """
            \\set n :n + 1
            \\set tid :base + :client_id * 1000000000 + :n
            \\set uid random(\(uids.lowerBound), \(uids.upperBound))
            BEGIN;
            INSERT INTO bench_floor_purchases (transaction_id, uid, product_id, price_milli)
                VALUES ('f' || :tid, 'u' || :uid, 'com.memolease.sesac1.sprout2', 2500000);
            INSERT INTO bench_floor_entries (transaction_id, account, amount_milli)
                VALUES ('f' || :tid, 'revenue_face', 2500000);
            END;

            """
        func run(base: Int, seconds: Double) async throws -> Pgbench.Result {
            try await pgbench.run(
                scripts: [script], defines: ["n": "0", "base": String(1_000_000_000_000 * base)], clients: clients,
                seconds: Int(seconds.rounded(.up)))
        }
        _ = try await run(base: 1, seconds: 1)
        return try await run(base: 2, seconds: seconds)
    }

    /// myinfo's statement, read back from the server after one call, with the uid as `'r' || n`
    /// (myinfo's readers, r0, r1, …, each holding the same fixed history).
    private static func measureMyinfo(
        server: BenchServer, clients: Int, seconds: Double, users: Int
    ) async throws -> Pgbench.Result {
        let sql = try await myinfoStatement(databaseURL: server.databaseURL)
        let pgbench = try Self.pgbench(server)
        let script = """
            \\set n random(0, \(users - 1))
            \(sql.replacingOccurrences(of: "$1", with: "('r' || :n)"));

            """
        _ = try await pgbench.run(scripts: [script], defines: [:], clients: clients, seconds: 1)
        return try await pgbench.run(
            scripts: [script], defines: [:], clients: clients, seconds: Int(seconds.rounded(.up)))
    }

    /// pgbench on the bench database of `server`'s cluster.
    private static func pgbench(_ server: BenchServer) throws -> Pgbench {
        guard
            let pgbench = Pgbench(
                socketDirectory: server.running.socketDirectory, port: server.running.port,
                user: server.running.superuser, database: "bench", folder: server.folder)
        else { throw BenchError("pgbench not found (postgresql-contrib / postgresql-15 provides it)") }
        return pgbench
    }

    /// The text of myinfo's statement as our libpq layer prepares it (`$1` the uid), read back after one
    /// `LedgerStore.accountSummary`; also what the myinfo peer prepares (`PeerComparison`).
    static func myinfoStatement(databaseURL: String) async throws -> String {
        // Prepared statements are per session: one connection runs the read and lists them.
        let single = PostgresClient(
            configuration: .init(connection: .init(url: databaseURL), minimumConnections: 0, maximumConnections: 1))
        let sql: String?
        do {
            _ = try await LedgerStore(client: single).accountSummary(of: "r0")
            let rows = try await single.query(
                "SELECT statement FROM pg_prepared_statements WHERE statement LIKE '%ARRAY(SELECT g.item_index%'")
            sql = try rows.first.map { try $0.decode(String.self, at: 0) }
            await single.shutdown()
        } catch {
            await single.shutdown()
            throw error
        }
        guard let sql, sql.contains("$1"), !sql.contains("$2") else {
            throw BenchError("myinfo's statement was not found among the prepared statements")
        }
        return sql
    }
}
