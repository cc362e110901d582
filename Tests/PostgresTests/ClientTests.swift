import Foundation
import Postgres
import Synchronization
import TestSupport
import Testing

@Suite("Client, pool and transactions")
struct ClientTests {
    @Test("a unique violation carries SQLSTATE 23505, the constraint, the table and the query")
    func uniqueViolation() async throws {
        try await withTestDatabase { db in
            try await db.client.query("CREATE TABLE members (uid text CONSTRAINT members_pkey PRIMARY KEY)")
            try await db.client.query("INSERT INTO members VALUES (\("a"))")
            let error = try await #require(throws: PostgresError.self) {
                try await db.client.query("INSERT INTO members VALUES (\("a"))")
            }
            #expect(error.code == .server)
            #expect(error.sqlState == .uniqueViolation)
            #expect(error.constraint == "members_pkey")
            #expect(error.table == "members")
            #expect(error.detail?.contains("(uid)=(a)") == true)
            #expect(error.query == "INSERT INTO members VALUES ($1)")
            #expect(!error.description.contains("(uid)=(a)"), "description is for logs: no values")
        }
    }

    @Test("a transaction whose body throws is rolled back and the connection is reusable")
    func rollbackOnThrow() async throws {
        struct Boom: Error {}
        try await withTestDatabase(maximumConnections: 1) { db in
            try await db.client.query("CREATE TABLE t (n int)")
            await #expect(throws: Boom.self) {
                try await db.client.withTransaction { connection in
                    try await connection.query("INSERT INTO t VALUES (1)")
                    throw Boom()
                }
            }
            // A failed statement inside the transaction also rolls everything back.
            await #expect(throws: PostgresError.self) {
                try await db.client.withTransaction { connection in
                    try await connection.query("INSERT INTO t VALUES (2)")
                    try await connection.query("INSERT INTO t VALUES (\("not a number"))")
                }
            }
            let committed = try await db.client.withTransaction { connection in
                try await connection.execute("INSERT INTO t VALUES (3)")
            }
            #expect(committed == 1)
            let values = try await db.client.query("SELECT n FROM t").map { try $0.decode(Int.self, at: 0) }
            #expect(values == [3])
        }
    }

    @Test("serialization failures are retried when asked, in a fresh transaction")
    func retriesSerializationFailures() async throws {
        try await withTestDatabase { db in
            try await db.client.query("CREATE TABLE counter (n int)")
            try await db.client.query("INSERT INTO counter VALUES (0)")
            let attempts = AttemptCounter()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await db.client.withTransaction(.retrying(50, isolation: .serializable)) { connection in
                            attempts.value.add(1, ordering: .relaxed)
                            let n = try await connection.query("SELECT n FROM counter").single().decode(Int.self, at: 0)
                            try await Task.sleep(for: .milliseconds(2))
                            try await connection.query("UPDATE counter SET n = \(n + 1)")
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await db.client.query("SELECT n FROM counter").single().decode(Int.self, at: 0) == 8)
            #expect(
                attempts.value.load(ordering: .relaxed) > 8,
                "concurrent serializable updates must have conflicted and retried")
        }
    }

    @Test("200 concurrent tasks share a pool of 4 connections")
    func concurrentTasksOverSmallPool() async throws {
        try await withTestDatabase(maximumConnections: 4) { db in
            try await db.client.query("CREATE TABLE hits (task int PRIMARY KEY, backend int)")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<200 {
                    group.addTask {
                        try await db.client.withTransaction { connection in
                            try await connection.query("INSERT INTO hits VALUES (\(task), pg_backend_pid())")
                            try await connection.query("SELECT pg_sleep(0.001)")
                        }
                    }
                }
                try await group.waitForAll()
            }
            let row = try await db.client.query("SELECT count(*), count(DISTINCT backend) FROM hits").single()
            #expect(try row.decode(Int.self, at: 0) == 200)
            #expect(try row.decode(Int.self, at: 1) <= 4)
            let stats = db.client.statistics
            #expect(stats.open <= 4 && stats.leased == 0 && stats.waiting == 0)
        }
    }

    @Test("a lease that waits longer than the timeout fails with poolTimeout")
    func leaseTimeout() async throws {
        try await withTestDatabase { db in
            let client = PostgresClient(
                configuration: .init(
                    connection: .init(url: db.url), minimumConnections: 0, maximumConnections: 1,
                    leaseTimeout: .milliseconds(200)))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await client.query("SELECT pg_sleep(1.5)") }
                // Until the sleeper holds the only connection (a fixed 300 ms was not always enough on a
                // loaded machine: the sleeper's task had not run yet, and the look-up took the slot first).
                let deadline = ContinuousClock.now + .seconds(5)
                while client.statistics.leased == 0, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(10))
                }
                // A pool timeout, not the slot the sleeper frees after 1.5 s (the query would then succeed).
                let error = try await #require(throws: PostgresError.self) { try await client.query("SELECT 1") }
                #expect(error.code == .poolTimeout)
                try await group.waitForAll()
            }
            #expect(try await client.query("SELECT 7").single().decode(Int.self, at: 0) == 7)
            await client.shutdown()
        }
    }

    @Test("cancelling a pg_sleep(10) returns promptly and the same connection is used again")
    func cancellation() async throws {
        try await withTestDatabase(maximumConnections: 1) { db in
            let before = try await db.client.query("SELECT pg_backend_pid()").single().decode(Int.self, at: 0)
            let sleeper = Task { try await db.client.query("SELECT pg_sleep(10)") }
            try await Task.sleep(for: .milliseconds(300))
            sleeper.cancel()
            // The server's own 57014 (below), not the end of the sleep: the cancel reached it in time.
            let result = await sleeper.result
            guard case .failure(let error) = result, let error = error as? PostgresError else {
                Issue.record("expected a PostgresError, got \(result)")
                return
            }
            #expect(error.code == .queryCancelled)
            #expect(error.sqlState == .queryCanceled)
            let after = try await db.client.query("SELECT pg_backend_pid()").single().decode(Int.self, at: 0)
            #expect(after == before, "the cancelled connection should be reused, not replaced")
            // Cancelling inside a transaction rolls it back and leaves the connection clean.
            let inTransaction = Task {
                try await db.client.withTransaction { connection in
                    try await connection.query("CREATE TABLE gone (n int)")
                    try await connection.query("SELECT pg_sleep(10)")
                }
            }
            try await Task.sleep(for: .milliseconds(300))
            inTransaction.cancel()
            _ = await inTransaction.result
            let exists = try await db.client.query("SELECT to_regclass('gone') IS NOT NULL").single().decode(
                Bool.self, at: 0)
            #expect(!exists)
        }
    }

    @Test("a 100,000-row COPY round trip, in and out, keeps every byte")
    func copyRoundTrip() async throws {
        try await withTestDatabase { db in
            try await db.client.query("CREATE TABLE items (id int8 PRIMARY KEY, label text, note text)")
            let count = 100_000
            func label(_ i: Int) -> String { "항목 \(i)\t\\tab\nline" }
            let copied = try await db.client.withConnection { connection in
                try await connection.copyFrom("COPY items (id, label, note) FROM STDIN") { writer in
                    for i in 0..<count {
                        try await writer.writeRow([String(i), label(i), i % 10 == 0 ? nil : "n\(i)"])
                    }
                }
            }
            #expect(copied == count)
            var lines = 0
            var bytes = 0
            var sample: [UInt8] = []
            try await db.client.withConnection { connection in
                try await connection.copyTo("COPY (SELECT id, label, note FROM items ORDER BY id) TO STDOUT") {
                    reader in
                    for try await chunk in reader {
                        if sample.isEmpty { sample = chunk }
                        lines += chunk.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
                        bytes += chunk.count
                    }
                }
                // The connection is usable after the stream.
                #expect(try await connection.query("SELECT 1").count == 1)
            }
            #expect(lines == count)
            let firstLine = String(decoding: sample.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
            #expect(firstLine == "0\t항목 0\\t\\\\tab\\nline\t\\N")
            let check = try await db.client.query("SELECT count(*), count(note), min(label) FROM items").single()
            #expect(try check.decode(Int.self, at: 0) == count)
            #expect(try check.decode(Int.self, at: 1) == count - count / 10)
            #expect(try check.decode(String.self, at: 2) == label(0))
        }
    }

    @Test("a COPY whose writer throws is aborted and writes nothing")
    func copyAbort() async throws {
        struct Stop: Error {}
        try await withTestDatabase(maximumConnections: 1) { db in
            try await db.client.query("CREATE TABLE items (id int8)")
            await #expect(throws: Stop.self) {
                try await db.client.withConnection { connection in
                    try await connection.copyFrom("COPY items FROM STDIN") { writer in
                        for i in 0..<50_000 { try await writer.writeRow([String(i)]) }
                        throw Stop()
                    }
                }
            }
            #expect(try await db.client.query("SELECT count(*) FROM items").single().decode(Int.self, at: 0) == 0)
        }
    }
}

final class AttemptCounter: Sendable {
    let value = Atomic<Int>(0)
}
