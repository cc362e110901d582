import Foundation
import Postgres
import TestSupport
import Testing

@Suite("Pool across a PostgreSQL restart")
struct RestartTests {
    // No wall-clock bound on "fails fast": a lease waits an hour here, so a query that waited for the
    // server instead of failing would outlast the test's time limit; the error must be the connection's.
    @Test(
        "the pool replaces broken connections after the server restarts; no client restart needed",
        .timeLimit(.minutes(1)))
    func survivesRestart() async throws {
        let folder = "/tmp/shopledger-restart-\(ProcessInfo.processInfo.processIdentifier)"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let cluster = try LocalPostgres(
            options: .init(dataDirectory: folder + "/data", port: try TestCluster.freePort(), durable: false))
        let running = try await cluster.start()
        let client = PostgresClient(
            configuration: .init(
                connection: .init(url: running.url(database: "postgres")), minimumConnections: 0, maximumConnections: 4,
                leaseTimeout: .seconds(3600))
        )
        do {
            // Fill the pool with several idle connections.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<4 { group.addTask { try await client.query("SELECT pg_sleep(0.05)") } }
                try await group.waitForAll()
            }
            let pidsBefore = try await client.query("SELECT pg_backend_pid()").single().decode(Int.self, at: 0)
            #expect(client.statistics.open >= 2)

            try await cluster.stop()
            // A request while the server is down fails at once with the connection's error.
            let downError = try await #require(throws: PostgresError.self) { try await client.query("SELECT 1") }
            #expect(downError.isConnectionError && downError.code != .poolTimeout, "\(downError)")

            _ = try await cluster.start()
            // Every query after the restart succeeds, whichever pooled connection it gets.
            for _ in 0..<8 {
                #expect(try await client.query("SELECT 1").single().decode(Int.self, at: 0) == 1)
            }
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<8 {
                    group.addTask { try await client.query("SELECT pg_backend_pid()").single().decode(Int.self, at: 0) }
                }
                for try await pid in group { #expect(pid != pidsBefore) }
            }
        } catch {
            await client.shutdown()
            try? await cluster.stop()
            throw error
        }
        await client.shutdown()
        try await cluster.stop()
    }
}
