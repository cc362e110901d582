import Foundation
import Postgres
import TestSupport
import Testing

/// Queries are sent without blocking and their answers read by the reactor thread (epoll): what
/// must still hold when a send or an answer does not fit the socket at once, when a query is
/// misused, and when the server speaks to a connection nobody is using.
@Suite("Queries through the reactor")
struct ReactorTests {
    @Test("a parameter far larger than the socket's buffers is sent whole, then the connection is reused")
    func largeParameter() async throws {
        // Building, checking and copying 16 MiB keeps a thread for most of a second in a debug build: on a
        // thread of its own, not one of the two cooperative threads every other test waits for.
        try await withTaskExecutorPreference(OwnThreadExecutor(label: "reactor-tests")) {
            try await largeParameterOnOwnThread()
        }
    }

    private func largeParameterOnOwnThread() async throws {
        try await withTestDatabase(maximumConnections: 1) { db in
            // 16 MiB: libpq's non-blocking send stops when the socket is full; the reactor finishes it.
            let text = String(repeating: "abcdefgh", count: 2 * 1024 * 1024)
            let row = try await db.client.query("SELECT length(\(text)::text), md5(\(text)::text)").single()
            let (length, digest) = try row.decode((Int, String).self)
            #expect(length == text.utf8.count)
            let expected = try await db.client.query("SELECT md5(repeat('abcdefgh', 2 * 1024 * 1024))").single()
                .decode(String.self, at: 0)
            #expect(digest == expected)
            #expect(try await db.client.query("SELECT 1 + \(1)").single().decode(Int.self, at: 0) == 2)
        }
    }

    @Test("an answer far larger than one read arrives whole: a 24 MiB value, then 200,000 rows")
    func largeAnswers() async throws {
        // As above: checking 24 MiB and decoding 200,000 rows, on a thread of its own.
        try await withTaskExecutorPreference(OwnThreadExecutor(label: "reactor-tests")) {
            try await largeAnswersOnOwnThread()
        }
    }

    private func largeAnswersOnOwnThread() async throws {
        try await withTestDatabase(maximumConnections: 1) { db in
            let value = try await db.client.query("SELECT repeat('x', \(24 * 1024 * 1024)::int4)").single()
                .decode(String.self, at: 0)
            #expect(value == String(repeating: "x", count: 24 * 1024 * 1024))
            let rows = try await db.client.query("SELECT g FROM generate_series(1, \(200_000)) g")
            let numbers = try rows.map { try $0.decode(Int.self, at: 0) }
            #expect(numbers.count == 200_000 && numbers.first == 1 && numbers.last == 200_000)
            let sum = numbers.reduce(0, +)
            let expectedSum = 200_000 * 200_001 / 2
            #expect(sum == expectedSum)
        }
    }

    @Test("a COPY sent through query() is refused and ended; the connection answers the next query")
    func copyThroughQuery() async throws {
        try await withTestDatabase(maximumConnections: 1) { db in
            try await db.client.query("CREATE TABLE copied (n int)")
            let backend = try await db.client.query("SELECT pg_backend_pid()").single().decode(Int32.self, at: 0)
            for sql: PostgresQuery in ["COPY copied FROM STDIN", "COPY copied TO STDOUT"] {
                let error = try await #require(throws: PostgresError.self) { try await db.client.query(sql) }
                #expect(error.code == .invalidUsage)
            }
            let after = try await db.client.query("SELECT pg_backend_pid()").single().decode(Int32.self, at: 0)
            #expect(after == backend, "the same connection, still usable")
            #expect(
                try await db.client.query("SELECT count(*)::int8 FROM copied").single().decode(Int.self, at: 0) == 0)
        }
    }

    @Test("an idle connection whose backend was terminated is not leased again; the next query gets a new one")
    func idleConnectionTerminated() async throws {
        try await withTestDatabase(maximumConnections: 2) { db in
            let backend = try await db.client.query("SELECT pg_backend_pid()").single().decode(Int32.self, at: 0)
            let killer = PostgresClient(
                configuration: .init(connection: .init(url: db.url), minimumConnections: 0, maximumConnections: 1))
            let terminated = try await killer.query("SELECT pg_terminate_backend(\(backend))").single()
                .decode(Bool.self, at: 0)
            await killer.shutdown()
            #expect(terminated)
            // The server's last words reach the idle socket; the reactor (or the lease's own check) sees them.
            try await Task.sleep(for: .milliseconds(300))
            for _ in 0..<5 {
                let pid = try await db.client.query("SELECT pg_backend_pid()").single().decode(Int32.self, at: 0)
                #expect(pid != backend)
            }
        }
    }

    @Test("500 queries at once on a pool of 8 connections all answer, each with its own parameter")
    func manyAtOnce() async throws {
        try await withTestDatabase(maximumConnections: 8) { db in
            let answers = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
                for index in 0..<500 {
                    group.addTask {
                        let row = try await db.client.query("SELECT \(index)::int8 * 2, pg_sleep(0.001)").single()
                        return (index, try row.decode(Int.self, at: 0))
                    }
                }
                return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
            }
            #expect(answers.count == 500 && answers.allSatisfy { $0.value == 2 * $0.key })
        }
    }
}
