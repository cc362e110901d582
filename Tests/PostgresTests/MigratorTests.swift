import Foundation
import Ledger
import Postgres
import TestSupport
import Testing

@Suite("Migrations")
struct MigratorTests {
    @Test("migrating an up-to-date database twice is a no-op")
    func twiceIsNoOp() async throws {
        try await withTestDatabase { db in
            let migrator = try LedgerSchema.migrator()
            let before = try await db.client.query(
                "SELECT version, checksum, applied_at FROM schema_migrations ORDER BY version")
            #expect(try await migrator.migrate(db.client) == [])
            #expect(try await migrator.migrate(db.client) == [])
            let after = try await db.client.query(
                "SELECT version, checksum, applied_at FROM schema_migrations ORDER BY version")
            #expect(before.count == migrator.migrations.count)
            #expect(
                zip(before, after).allSatisfy {
                    (try? $0.decode((Int, String, Date).self) == $1.decode((Int, String, Date).self)) == true
                })
            #expect(try await migrator.status(db.client).allSatisfy { $0.state == .applied })
        }
    }

    @Test("migrations apply in order, once each, and a changed applied migration is refused")
    func changedMigrationRefused() async throws {
        try await withTestDatabase { db in
            let first = try Migration(name: "0001_first.sql", sql: "CREATE TABLE a (n int); INSERT INTO a VALUES (1);")
            let second = try Migration(name: "0002_second.sql", sql: "CREATE TABLE b (n int);")
            // A scratch schema keeps these apart from the ledger's own schema_migrations.
            try await db.client.query("CREATE SCHEMA scratch")
            let scratch = PostgresClient(
                configuration: .init(
                    connection: .init(url: db.url + "&options=-csearch_path%3Dscratch"), maximumConnections: 2))
            defer { Task { await scratch.shutdown() } }
            #expect(
                try await Migrator(migrations: [second, first]).migrate(scratch) == [
                    "0001_first.sql", "0002_second.sql",
                ])
            #expect(try await Migrator(migrations: [first, second]).migrate(scratch) == [])
            #expect(try await scratch.query("SELECT count(*) FROM a").single().decode(Int.self, at: 0) == 1)

            let changed = try Migration(name: "0001_first.sql", sql: "CREATE TABLE a (n bigint);")
            let error = try await #require(throws: PostgresError.self) {
                try await Migrator(migrations: [changed, second]).migrate(scratch)
            }
            #expect(error.code == .migration)
            #expect(error.message.contains("0001_first.sql") && error.message.contains("changed"))
            await #expect(throws: PostgresError.self) {
                try await Migrator(migrations: [changed, second]).status(scratch)
            }

            // A failing migration leaves nothing behind: it ran in its own transaction.
            let broken = try Migration(name: "0003_broken.sql", sql: "CREATE TABLE c (n int); SELECT 1/0;")
            await #expect(throws: PostgresError.self) {
                try await Migrator(migrations: [first, second, broken]).migrate(scratch)
            }
            #expect(
                try await scratch.query("SELECT to_regclass('scratch.c') IS NULL").single().decode(Bool.self, at: 0))
            let status = try await Migrator(migrations: [first, second, broken]).status(scratch)
            #expect(status.map(\.state) == [.applied, .applied, .pending])
        }
    }

    /// A client on a schema of its own in `db` (schema_migrations and the tables stay apart from the ledger's).
    static func scratchClient(
        _ db: TestDatabase, schema: String, connections: Int = 2, create: Bool = true
    ) async throws
        -> PostgresClient
    {
        if create { try await db.client.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(schema)")) }
        return PostgresClient(
            configuration: .init(
                connection: .init(url: db.url + "&options=-csearch_path%3D\(schema)"), minimumConnections: 0,
                maximumConnections: connections))
    }

    @Test("servers starting together on a fresh database all migrate without an error, each migration applied once")
    func concurrentMigratorsOnAFreshDatabase() async throws {
        try await withTestDatabase { db in
            let migrations = [
                try Migration(name: "0001_first.sql", sql: "CREATE TABLE a (n int); INSERT INTO a VALUES (1);"),
                try Migration(name: "0002_second.sql", sql: "CREATE TABLE b (n int);"),
            ]
            for round in 0..<3 {
                let schema = "fresh\(round)"
                var clients: [PostgresClient] = []
                for index in 0..<6 {
                    clients.append(try await Self.scratchClient(db, schema: schema, connections: 1, create: index == 0))
                }
                let results = await withTaskGroup(of: Result<[String], any Error>.self) { group in
                    for client in clients {
                        group.addTask {
                            do {
                                return .success(try await Migrator(migrations: migrations).migrate(client))
                            } catch {
                                return .failure(error)
                            }
                        }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                }
                for client in clients { await client.shutdown() }
                let failures = results.compactMap { result -> String? in
                    if case .failure(let error) = result { return "\(error)" }
                    return nil
                }
                #expect(failures.isEmpty, "round \(round): \(failures)")
                let applied = results.compactMap { try? $0.get() }.flatMap { $0 }
                #expect(applied.sorted() == ["0001_first.sql", "0002_second.sql"], "each applied once: \(applied)")
                let rows = try await db.client.query(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(schema).a"))
                    .single()
                #expect(try rows.decode(Int.self, at: 0) == 1)
            }
        }
    }

    @Test("an older build starts on a newer schema when the newer migrations are additive, and refuses otherwise")
    func olderBuildOnNewerSchema() async throws {
        try await withTestDatabase { db in
            let first = try Migration(name: "0001_first.sql", sql: "CREATE TABLE a (n int);")
            let additive = try Migration(
                name: "0002_index.sql", sql: "-- shopledger: additive\nCREATE INDEX a_by_n ON a (n);")
            let breaking = try Migration(name: "0003_rename.sql", sql: "ALTER TABLE a RENAME COLUMN n TO m;")
            let scratch = try await Self.scratchClient(db, schema: "newer")
            #expect(try await Migrator(migrations: [first, additive]).migrate(scratch).count == 2)
            // The older build knows only 0001: 0002 is additive, so it goes on.
            #expect(try await Migrator(migrations: [first]).migrate(scratch) == [])
            #expect(try await Migrator(migrations: [first]).status(scratch).map(\.state) == [.applied, .newer])

            #expect(
                try await Migrator(migrations: [first, additive, breaking], release: "1.4.0").migrate(scratch)
                    == ["0003_rename.sql"])
            let older = try Migrator(migrations: [first], release: "1.3.0")
            let error = try await #require(throws: PostgresError.self) { try await older.migrate(scratch) }
            #expect(error.code == .migration)
            // It names the migration, that it is not additive, the release to run, and this one.
            #expect(
                error.message.contains("0003_rename.sql") && error.message.contains("not additive")
                    && error.message.contains("run shopledger 1.4.0 or newer")
                    && error.message.contains("(this is 1.3.0)"), "\(error.message)")
            await #expect(throws: PostgresError.self) { try await older.status(scratch) }
            // The report still lists everything, the newer ones after this build's own.
            let report = try await older.report(scratch)
            #expect(report.map(\.name) == ["0001_first.sql", "0002_index.sql", "0003_rename.sql"])
            #expect(report.map(\.state) == [.applied, .newer, .newer])
            #expect(report.map(\.isAdditive) == [false, true, false])
            // 0001 and 0002 were applied by a migrator that did not say its release.
            #expect(report.map(\.appliedBy) == [nil, nil, "1.4.0"])
            await scratch.shutdown()
        }
    }
}

@Suite("Recovery conflicts on a standby")
struct RecoveryConflictTests {
    @Test("a read cancelled for a recovery conflict is read again; other errors are not retried")
    func retried() async throws {
        let conflict = PostgresError(
            code: .server, message: "canceling statement due to conflict with recovery", sqlState: .serializationFailure
        )
        #expect(conflict.isRecoveryConflict)
        var calls = 0
        let value = try await retryingRecoveryConflicts(delay: .milliseconds(1)) { () async throws -> Int in
            calls += 1
            if calls < 3 { throw conflict }
            return 7
        }
        #expect(value == 7 && calls == 3)

        calls = 0
        let other = PostgresError(code: .server, message: "could not serialize access", sqlState: .serializationFailure)
        #expect(!other.isRecoveryConflict)
        await #expect(throws: PostgresError.self) {
            try await retryingRecoveryConflicts(delay: .milliseconds(1)) { () async throws -> Int in
                calls += 1
                throw other
            }
        }
        #expect(calls == 1)
    }
}
