import BenchSupport
import Foundation
import Ledger
import Postgres

/// The database ceiling, measured in the same run on the same cluster and database once the HTTP
/// workloads are done and the server is stopped: the exact statement a new purchase sends (read back
/// from the server, as LedgerBench does), driven by PostgreSQL's `pgbench -M prepared` with as many
/// clients as the server has pool connections. End-to-end purchases per second are quoted as a share
/// of this.
enum Ceiling {
    static let uids = 100_000...100_999

    static func measure(server: BenchServer, clients: Int, seconds: Double, products: [String]) async throws
        -> Pgbench.Result
    {
        let client = PostgresClient(
            configuration: .init(connection: .init(url: server.databaseURL), minimumConnections: 0, maximumConnections: 4))
        do {
            let result = try await measure(
                server: server, client: client, clients: clients, seconds: seconds, products: products)
            await client.shutdown()
            return result
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
                    for uid in uids where uid % 4 == lane { _ = try await ledger.register(uid: String(uid), profile: profile) }
                }
            }
            try await group.waitForAll()
        }
        let statement = try await PurchaseStatement.capture(
            url: server.databaseURL, log: server.folder + "/data.log",
            transaction: benchTransaction("ceiling-capture", product: products[1]), uid: String(uids.lowerBound))
        guard
            let pgbench = Pgbench(
                socketDirectory: server.running.socketDirectory, port: server.running.port,
                user: server.running.superuser, database: "bench", folder: server.folder)
        else { throw BenchError("pgbench not found (postgresql-contrib / postgresql-15 provides it)") }
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
}
