import Foundation
import Postgres
import TestSupport
import Testing

/// The per-connection prepared-statement cache, observed from the server's side through
/// `pg_prepared_statements` (the calling session's own statements). Every client here has one
/// connection, so every query lands on the session whose statements are inspected; the
/// inspecting queries have no parameters, so they are never prepared themselves.
@Suite("Prepared statements")
struct PreparedStatementTests {
    struct Prepared: Equatable {
        let name: String
        let statement: String
        /// Plans chosen, custom or generic: one per execution.
        let executions: Int
    }

    static func prepared(_ client: PostgresClient) async throws -> [Prepared] {
        try await client.query(
            "SELECT name, statement, generic_plans + custom_plans FROM pg_prepared_statements ORDER BY prepare_time, name"
        ).map { row in
            let (name, statement, executions) = try row.decode((String, String, Int).self)
            return Prepared(name: name, statement: statement, executions: executions)
        }
    }

    static func singleConnection(_ db: TestDatabase, cacheSize: Int = 128) -> PostgresClient {
        PostgresClient(
            configuration: .init(
                connection: .init(url: db.url, preparedStatementCacheSize: cacheSize), minimumConnections: 0,
                maximumConnections: 1))
    }

    static func backendPID(_ client: PostgresClient) async throws -> Int {
        try await client.query("SELECT pg_backend_pid()").single().decode(Int.self, at: 0)
    }

    @Test("a statement with parameters is prepared once per connection and executed by name afterwards")
    func reuse() async throws {
        try await withTestDatabase { db in
            let client = Self.singleConnection(db)
            for n in 0..<50 {
                #expect(try await client.query("SELECT \(n)::int8 + 1").single().decode(Int.self, at: 0) == n + 1)
            }
            // The same text bound with other parameter types is another statement.
            #expect(try await client.query("SELECT \("7")::int8 + 1").single().decode(Int.self, at: 0) == 8)
            try await client.query("SELECT 42")
            let statements = try await Self.prepared(client)
            #expect(statements.map(\.statement) == ["SELECT $1::int8 + 1", "SELECT $1::int8 + 1"])
            #expect(statements.map(\.executions) == [50, 1])
            #expect(statements.allSatisfy { $0.name.hasPrefix("shopledger_") })
            await client.shutdown()
        }
    }

    /// Issue 30's read regression: PostgreSQL keeps a statement's custom-plan costs across the
    /// invalidation an ANALYZE causes, so a statement whose first executions ran on a small table
    /// compares the grown table's generic plan with the small table's custom costs and plans every
    /// execution afresh from then on (a fresh session picks the generic plan after five). A
    /// statement is therefore prepared again after `preparedStatementMaxUses` executions.
    @Test("after its table grows tenfold and is analyzed, a statement settles on a generic plan again")
    func genericPlanAfterGrowth() async throws {
        try await withTestDatabase { db in
            let client = PostgresClient(
                configuration: .init(
                    connection: .init(url: db.url, preparedStatementMaxUses: 50), minimumConnections: 0,
                    maximumConnections: 1))
            try await client.withConnection { connection in
                try await connection.executeScript(
                    unsafeSQL: """
                        CREATE TABLE plan_users (uid text PRIMARY KEY);
                        CREATE TABLE plan_rows (uid text NOT NULL, at timestamptz NOT NULL, id text NOT NULL);
                        CREATE INDEX plan_rows_by_user ON plan_rows (uid, at);
                        INSERT INTO plan_users SELECT 'u' || n FROM generate_series(1, 2000) n;
                        INSERT INTO plan_rows SELECT 'u' || (n % 2000 + 1), now() - n * interval '1 minute', 't' || n
                            FROM generate_series(1, 6000) n;
                        ANALYZE plan_users, plan_rows;
                        """)
            }
            func read(_ uid: String) async throws -> [String] {
                try await client.query(
                    """
                    SELECT ARRAY(SELECT r.id FROM plan_rows r WHERE r.uid = u.uid ORDER BY r.at, r.id)
                    FROM plan_users u WHERE u.uid = \(uid)::text
                    """
                ).single().decode([String].self, at: 0)
            }
            for n in 1...30 { _ = try await read("u\(n)") }
            try await client.query(
                """
                INSERT INTO plan_rows SELECT 'u' || (n % 2000 + 1), now() - n * interval '1 second', 'g' || n
                    FROM generate_series(1, 54000) n
                """)
            try await client.query("ANALYZE plan_rows")
            for n in 1...60 { #expect(try await read("u\(n)").count == 30) }
            // 90 executions: the first statement ran 50 (30 before the growth, 20 after), the one prepared again
            // at its 51st use ran the last 40, and settled on the generic plan after the five custom plans any
            // new statement starts with.
            let (generic, custom) = try await client.query(
                """
                SELECT generic_plans, custom_plans FROM pg_prepared_statements
                WHERE statement LIKE '%plan_rows%' ORDER BY prepare_time DESC LIMIT 1
                """
            ).single().decode((Int, Int).self)
            #expect(custom <= 5, "the statement plans every execution afresh (\(custom) custom plans)")
            #expect(generic == 35)
            await client.shutdown()
        }
    }

    @Test("with the cache size at 0 nothing is prepared")
    func disabled() async throws {
        try await withTestDatabase { db in
            let client = Self.singleConnection(db, cacheSize: 0)
            var values: [Int] = []
            for n in 0..<5 {
                values.append(try await client.query("SELECT \(n)::int8").single().decode(Int.self, at: 0))
            }
            #expect(values == Array(0..<5))
            let statements = try await Self.prepared(client)
            #expect(statements.isEmpty)
            await client.shutdown()
        }
    }

    @Test("the cache is bounded: the least recently used statement is deallocated on the server")
    func eviction() async throws {
        try await withTestDatabase { db in
            let client = Self.singleConnection(db, cacheSize: 3)
            func run(_ letter: String) async throws {
                let value = try await client.query("SELECT \(unsafeSQL: "'\(letter)'") || \("!")::text").single()
                    .decode(String.self, at: 0)
                #expect(value == letter + "!")
            }
            for letter in ["a", "b", "c", "a", "d"] { try await run(letter) }
            // b was the least recently used when d came: it is gone; a, c and d remain.
            var statements = try await Self.prepared(client)
            #expect(
                statements.map(\.statement) == [
                    "SELECT 'a' || $1::text", "SELECT 'c' || $1::text", "SELECT 'd' || $1::text",
                ])
            #expect(statements.map(\.executions) == [2, 1, 1])
            // b comes back under a new name and pushes out c, now the least recently used.
            try await run("b")
            statements = try await Self.prepared(client)
            #expect(
                statements.map(\.statement) == [
                    "SELECT 'a' || $1::text", "SELECT 'd' || $1::text", "SELECT 'b' || $1::text",
                ])
            #expect(Set(statements.map(\.name)).count == 3)
            #expect(statements.last?.name == "shopledger_5", "names are never reused")
            await client.shutdown()
        }
    }

    @Test("a cached SELECT * keeps working after a column is added to its table")
    func resultTypeChanges() async throws {
        try await withTestDatabase { db in
            let client = Self.singleConnection(db)
            try await client.query("CREATE TABLE items (id int8 PRIMARY KEY)")
            try await client.query("INSERT INTO items VALUES (1), (2)")
            let select: PostgresQuery = "SELECT * FROM items WHERE id = \(1)"
            #expect(try await client.query(select).columns.count == 1)
            try await client.query("ALTER TABLE items ADD COLUMN label text NOT NULL DEFAULT 'new'")
            // Outside a transaction the stale statement is prepared again and the call succeeds.
            let row = try await client.query(select).single()
            #expect(try row.decode((Int, String).self) == (1, "new"))
            var statements = try await Self.prepared(client)
            #expect(statements.count == 1, "the stale statement is deallocated: \(statements)")
            #expect(statements.first?.name == "shopledger_2")

            // Inside a transaction the error has aborted it: it is reported and rolled back, and
            // the next transaction works without any intervention.
            try await client.query("ALTER TABLE items ADD COLUMN note text")
            let error = try await #require(throws: PostgresError.self) {
                try await client.withTransaction { connection in
                    try await connection.query("INSERT INTO items (id, label) VALUES (\(3), \("three"))")
                    return try await connection.query(select)
                }
            }
            #expect(error.sqlState == .featureNotSupported, "\(error)")
            #expect(error.isRetryableTransactionFailure)
            #expect(
                try await client.query("SELECT count(*) FROM items").single().decode(Int.self, at: 0) == 2,
                "rolled back")
            let rows = try await client.withTransaction { connection in try await connection.query(select) }
            #expect(rows.columns.map(\.name) == ["id", "label", "note"])
            // With retries asked for, withTransaction cures it on its own.
            try await client.query("ALTER TABLE items DROP COLUMN note")
            let retried = try await client.withTransaction(.retrying(2)) { connection in
                try await connection.query(select)
            }
            #expect(retried.columns.map(\.name) == ["id", "label"])
            statements = try await Self.prepared(client)
            #expect(statements.filter { $0.statement.hasPrefix("SELECT * FROM items") }.count == 1)
            await client.shutdown()
        }
    }

    @Test("statements deallocated behind the cache's back are prepared again")
    func deallocatedBehindItsBack() async throws {
        try await withTestDatabase { db in
            let client = Self.singleConnection(db)
            let query: PostgresQuery = "SELECT \(5)::int8 * 2"
            #expect(try await client.query(query).single().decode(Int.self, at: 0) == 10)
            // Hidden in a DO block, where the cache cannot see it: found out by the server's 26000.
            try await client.query("DO $$ BEGIN EXECUTE 'DEAL' || 'LOCATE ALL'; END $$")
            #expect(try await Self.prepared(client).isEmpty)
            #expect(try await client.query(query).single().decode(Int.self, at: 0) == 10)
            #expect(try await Self.prepared(client).map(\.executions) == [1])
            // Hidden inside a transaction, the error aborts it (and names the statement)...
            let error = try await #require(throws: PostgresError.self) {
                try await client.withTransaction { connection in
                    try await connection.query("DO $$ BEGIN EXECUTE 'DEAL' || 'LOCATE ALL'; END $$")
                    try await connection.query(query)
                }
            }
            #expect(error.sqlState == .invalidSQLStatementName, "\(error)")
            // ...and the next use prepares afresh.
            #expect(try await client.query(query).single().decode(Int.self, at: 0) == 10)
            // As a statement of its own, or in a script, the cache forgets everything at once, so
            // even a transaction's first use succeeds.
            for discard in ["DISCARD ALL", "deallocate all"] {
                try await client.query(PostgresQuery(unsafeSQL: discard))
                let inTransaction = try await client.withTransaction { connection in
                    try await connection.query(query).single().decode(Int.self, at: 0)
                }
                #expect(inTransaction == 10)
            }
            try await client.withConnection { connection in
                try await connection.executeScript(unsafeSQL: "SELECT 1; DEALLOCATE ALL")
            }
            let afterScript = try await client.withTransaction { connection in
                try await connection.query(query).single().decode(Int.self, at: 0)
            }
            #expect(afterScript == 10)
            #expect(try await Self.prepared(client).map(\.executions) == [1])
            await client.shutdown()
        }
    }

    @Test("a statement that only mentions discarding leaves no statement behind on the server")
    func falseAlarmLeaksNothing() async throws {
        try await withTestDatabase { db in
            let client = Self.singleConnection(db)
            let query: PostgresQuery = "SELECT \(5)::int8 * 2"
            #expect(try await client.query(query).single().decode(Int.self, at: 0) == 10)
            // Its text says "discard", so the cache forgets its statements, though none was dropped.
            try await client.query("SELECT 1 AS discarded_rows")
            try await client.withConnection { connection in
                try await connection.executeScript(unsafeSQL: "SELECT 'deallocate me'")
            }
            #expect(try await client.query(query).single().decode(Int.self, at: 0) == 10)
            // Prepared afresh under a new name; the old one deallocated, not left on the server.
            let statements = try await Self.prepared(client)
            #expect(statements.count == 1, "\(statements)")
            #expect(statements.map(\.executions) == [1])
            await client.shutdown()
        }
    }

    @Test("errors inside a transaction leave the cached statements usable")
    func errorsInTransactions() async throws {
        struct Stop: Error {}
        try await withTestDatabase { db in
            let client = Self.singleConnection(db)
            try await client.query("CREATE TABLE t (n int8 PRIMARY KEY)")
            let insert = { (n: Int) -> PostgresQuery in "INSERT INTO t VALUES (\(n))" }
            try await client.execute(insert(1))
            // A unique violation on a cached statement, then a statement in the failed transaction.
            try await client.withConnection { connection in
                try await connection.query("BEGIN")
                let duplicate = try await #require(throws: PostgresError.self) {
                    try await connection.execute(insert(1))
                }
                #expect(duplicate.sqlState == .uniqueViolation)
                let aborted = try await #require(throws: PostgresError.self) {
                    try await connection.query("SELECT \(1)::int8 AS never_prepared")
                }
                #expect(aborted.sqlState == .inFailedSQLTransaction, "\(aborted)")
                try await connection.query("ROLLBACK")
            }
            // A statement first prepared in a transaction that rolls back stays prepared (PREPARE
            // is not transactional) and is reused.
            await #expect(throws: Stop.self) {
                try await client.withTransaction { connection in
                    try await connection.query("SELECT n FROM t WHERE n > \(0)")
                    throw Stop()
                }
            }
            #expect(try await client.query("SELECT n FROM t WHERE n > \(0)").count == 1)
            try await client.execute(insert(2))
            let statements = try await Self.prepared(client)
            #expect(statements.map(\.statement) == ["INSERT INTO t VALUES ($1)", "SELECT n FROM t WHERE n > $1"])
            #expect(statements.map(\.executions) == [3, 2])
            #expect(!statements.contains { $0.statement.contains("never_prepared") })
            await client.shutdown()
        }
    }

    @Test("a cancelled prepared statement stays cached and its connection is reused")
    func cancellation() async throws {
        try await withTestDatabase { db in
            let client = Self.singleConnection(db)
            let pid = try await Self.backendPID(client)
            // The first use (prepare, then execute) and a later one (a cache hit) are both cancelled.
            for attempt in 0..<2 {
                let sleeper = Task { try await client.query("SELECT pg_sleep(\(10.0)), \(attempt)::int8") }
                try await Task.sleep(for: .milliseconds(300))
                sleeper.cancel()
                let result = await sleeper.result
                guard case .failure(let error as PostgresError) = result else {
                    Issue.record("expected a PostgresError, got \(result)")
                    return
                }
                // Cancelled by the server (its 57014), not run to the sleep's end.
                #expect(error.code == .queryCancelled && error.sqlState == .queryCanceled, "\(error)")
            }
            #expect(try await client.query("SELECT pg_sleep(\(0.0)), \(7)::int8").single().decode(Int.self, at: 1) == 7)
            #expect(try await Self.backendPID(client) == pid)
            let statements = try await Self.prepared(client)
            #expect(statements.count == 1)
            #expect(statements.first?.executions == 3)
            await client.shutdown()
        }
    }

    @Test("a replaced connection starts with an empty cache")
    func replacedConnection() async throws {
        try await withTestDatabase { db in
            let client = Self.singleConnection(db)
            let query: PostgresQuery = "SELECT \(3)::int8 + 4"
            #expect(try await client.query(query).single().decode(Int.self, at: 0) == 7)
            let pid = try await Self.backendPID(client)
            // Killed while idle in the pool: found on the next lease and replaced.
            #expect(
                try await db.client.query("SELECT pg_terminate_backend(\(pid)::integer, 5000)").single().decode(
                    Bool.self, at: 0))
            try await Task.sleep(for: .milliseconds(100))
            #expect(try await client.query(query).single().decode(Int.self, at: 0) == 7)
            #expect(try await Self.backendPID(client) != pid)
            // Prepared afresh as this session's first statement: had the old cache been kept, its
            // name would have failed with 26000 and been replaced by shopledger_2.
            #expect(
                try await Self.prepared(client) == [
                    Prepared(name: "shopledger_1", statement: "SELECT $1::int8 + 4", executions: 1)
                ])

            // Killed while leased, between two statements: the second fails as a connection
            // error, and the next lease works on a new connection.
            let error = try await #require(throws: PostgresError.self) {
                try await client.withConnection { connection in
                    let pid = try await connection.query("SELECT pg_backend_pid()").single().decode(Int.self, at: 0)
                    _ = try await db.client.query("SELECT pg_terminate_backend(\(pid)::integer, 5000)")
                    try await connection.query(query)
                }
            }
            #expect(error.isConnectionError, "\(error)")
            #expect(try await client.query(query).single().decode(Int.self, at: 0) == 7)
            #expect(try await Self.prepared(client).map(\.name) == ["shopledger_1"])
            await client.shutdown()
        }
    }

    @Test("every bind type is right on a prepared statement's first and later executions, NULLs included")
    func bindsOnCacheHits() async throws {
        try await withTestDatabase { db in
            let client = Self.singleConnection(db)
            try await client.query(
                """
                CREATE TABLE everything (
                    n int, i16 int2, i32 int4, i64 int8, flag bool, label text, ratio float8, at timestamptz,
                    id uuid, blob bytea, doc jsonb, ints int8[], words text[]
                )
                """)
            struct Values: Equatable {
                var i16: Int16?, i32: Int32?, i64: Int64?, flag: Bool?, label: String?, ratio: Double?, at: Date?
                var id: UUID?, blob: Data?, doc: String?, ints: [Int]?, words: [String]?
            }
            let samples: [Values] = [
                Values(
                    i16: 1, i32: -2, i64: Int64.max, flag: true, label: "새싹 'q' \\", ratio: 0.5,
                    at: Date(timeIntervalSince1970: 1_700_000_000.25), id: UUID(), blob: Data([0, 1, 255]),
                    doc: #"{"a": 1}"#, ints: [1, -1], words: ["a b", "\"", ""]),
                Values(),
                Values(
                    i16: Int16.min, i32: Int32.max, i64: -1, flag: false, label: "", ratio: -1e300,
                    at: Date(timeIntervalSince1970: 0), id: UUID(), blob: Data(), doc: "[]", ints: [], words: ["NULL"]),
            ]
            for (n, v) in samples.enumerated() {
                try await client.query(
                    """
                    INSERT INTO everything VALUES (\(n), \(v.i16), \(v.i32), \(v.i64), \(v.flag), \(v.label), \(v.ratio),
                        \(v.at), \(v.id), \(v.blob), \(v.doc.map(PostgresJSON.init)), \(v.ints), \(v.words))
                    """)
            }
            for (n, v) in samples.enumerated() {
                let row = try await client.query(
                    "SELECT i16, i32, i64, flag, label, ratio, at, id, blob, doc::text, ints, words FROM everything WHERE n = \(n)"
                ).single()
                let (i16, i32, i64, flag, label, ratio) = try row.decode(
                    (Int16?, Int32?, Int64?, Bool?, String?, Double?).self)
                let at = try row.decode(Date?.self, at: 6)
                let id = try row.decode(UUID?.self, at: 7)
                let blob = try row.decode(Data?.self, at: 8)
                let doc = try row.decode(String?.self, at: 9)
                let ints = try row.decode([Int]?.self, at: 10)
                let words = try row.decode([String]?.self, at: 11)
                let decoded = Values(
                    i16: i16, i32: i32, i64: i64, flag: flag, label: label, ratio: ratio, at: at, id: id, blob: blob,
                    doc: doc, ints: ints, words: words)
                #expect(decoded == v, "row \(n)")
            }
            // One INSERT and one SELECT, each prepared once and executed three times.
            #expect(try await Self.prepared(client).map(\.executions) == [3, 3])
            await client.shutdown()
        }
    }
}
