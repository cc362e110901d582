import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

@testable import Postgres

/// A backend stopped with SIGSTOP answers nothing, not even a cancel request: the client must give up
/// on it within its cancel grace, keep the slot until libpq returns, and recover once it continues.
@Suite("Client against a hung server (SIGSTOP on the backend)")
struct HungServerTests {
    @Test(
        "a cancelled query on a stopped backend returns within the cancel grace; the slot is kept until it continues, then reused",
        .timeLimit(.minutes(1))
    )
    func cancelledQueryOnStoppedBackend() async throws {
        try await withTestDatabase { db in
            let threads = LoggingThreads()
            let client = PostgresClient(
                configuration: .init(
                    connection: .init(url: db.url), minimumConnections: 0, maximumConnections: 1,
                    leaseTimeout: .milliseconds(300), cancelGrace: .milliseconds(200)),
                logger: threads.logger)
            let backend = try await client.query("SELECT pg_backend_pid()").single().decode(Int32.self, at: 0)
            #expect(kill(backend, SIGSTOP) == 0)
            do {
                let stuck = Task { try await client.query("SELECT 1") }
                try await Task.sleep(for: .milliseconds(300))
                stuck.cancel()
                // It returns while the backend is still stopped (it continues only below): given up on, not
                // answered. One that waited for the backend would hang until the time limit.
                let result = await stuck.result
                guard case .failure(let error as PostgresError) = result else {
                    Issue.record("expected a PostgresError, got \(result)")
                    _ = kill(backend, SIGCONT)
                    return
                }
                #expect(error.code == .queryCancelled)
                // The abandoned connection still holds the only slot: a lease waits, and times out.
                let lease = try await #require(throws: PostgresError.self) { try await client.query("SELECT 2") }
                #expect(lease.code == .poolTimeout)
                #expect(client.statistics.open == 1 && client.statistics.leased == 0)
            } catch {
                _ = kill(backend, SIGCONT)
                throw error
            }
            #expect(kill(backend, SIGCONT) == 0)
            // The answer arrives (the reactor reads it), the connection is closed, the slot opens a fresh one.
            var recovered: Int32?
            let deadline = ContinuousClock.now + .seconds(10)
            while recovered == nil, ContinuousClock.now < deadline {
                recovered = try? await client.query("SELECT pg_backend_pid()").single().decode(Int32.self, at: 0)
            }
            #expect(recovered != nil && recovered != backend, "a new connection replaces the abandoned one")
            // Closing it (`PQfinish`) ran on the pool's threads, not on the reactor's, which serves every connection.
            let closedOn = threads.threads(logging: "closed a database connection abandoned")
            #expect(closedOn.count == 1, "closed once: \(closedOn)")
            #expect(!closedOn.contains(SocketReactor.threadName), "closed on \(closedOn)")
            await client.shutdown()
        }
    }

    @Test("shutdown does not wait for a connection abandoned to a stopped backend", .timeLimit(.minutes(1)))
    func shutdownWithStoppedBackend() async throws {
        try await withTestDatabase { db in
            // A shutdown that waited for the abandoned connection would wait out this hour, past the time limit.
            let client = PostgresClient(
                configuration: .init(
                    connection: .init(url: db.url), minimumConnections: 0, maximumConnections: 2,
                    cancelGrace: .milliseconds(100), shutdownTimeout: .seconds(3600)))
            let backend = try await client.query("SELECT pg_backend_pid()").single().decode(Int32.self, at: 0)
            #expect(kill(backend, SIGSTOP) == 0)
            defer { _ = kill(backend, SIGCONT) }
            let stuck = Task { try await client.query("SELECT 1") }
            try await Task.sleep(for: .milliseconds(200))
            stuck.cancel()
            _ = await stuck.result
            await client.shutdown()
            #expect(client.statistics.open == 1, "the abandoned connection is left to the stopped backend")
        }
    }

    @Test("the pool's statement and idle-in-transaction timeouts reach the server; keepalives are asked for")
    func sessionTimeouts() async throws {
        try await withTestDatabase { db in
            let connection = ConnectionConfiguration(
                url: db.url, statementTimeout: .milliseconds(1500), idleInTransactionSessionTimeout: .seconds(7),
                deadPeerTimeout: .seconds(30))
            let client = PostgresClient(
                configuration: .init(connection: connection, minimumConnections: 0, maximumConnections: 1))
            let row = try await client.query(
                "SELECT current_setting('statement_timeout'), current_setting('idle_in_transaction_session_timeout')"
            ).single()
            let (statement, idle) = try row.decode((String, String).self)
            #expect(statement == "1500ms")
            #expect(idle == "7s")
            let error = try await #require(throws: PostgresError.self) { try await client.query("SELECT pg_sleep(5)") }
            #expect(error.sqlState == .queryCanceled && error.code == .server, "the server cancelled it: \(error)")
            let keywords = Dictionary(connection.sessionParameters, uniquingKeysWith: { first, _ in first })
            #expect(
                keywords["keepalives"] == "1" && keywords["tcp_user_timeout"] == "30000"
                    && keywords["keepalives_count"] == "3")
            await client.shutdown()
        }
    }
}

/// Which thread logged each message: the pool logs an abandoned connection's close from the thread that closed it.
private final class LoggingThreads: Sendable {
    private let entries = Mutex<[(message: String, thread: String)]>([])

    var logger: Logger {
        Logger(label: "hung-server-tests") { _ in Handler(threads: self) }
    }

    func threads(logging prefix: String) -> [String] {
        entries.withLock { $0.filter { $0.message.hasPrefix(prefix) }.map(\.thread) }
    }

    private struct Handler: LogHandler {
        let threads: LoggingThreads
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let thread = Thread.current.name ?? ""
            threads.entries.withLock { $0.append((event.message.description, thread)) }
        }
    }
}
