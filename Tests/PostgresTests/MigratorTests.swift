import Foundation
import Ledger
import Postgres
import Testing
import TestSupport

@Suite("Migrations")
struct MigratorTests {
    @Test("migrating an up-to-date database twice is a no-op")
    func twiceIsNoOp() async throws {
        try await withTestDatabase { db in
            let migrator = try LedgerSchema.migrator()
            let before = try await db.client.query("SELECT version, checksum, applied_at FROM schema_migrations ORDER BY version")
            #expect(try await migrator.migrate(db.client) == [])
            #expect(try await migrator.migrate(db.client) == [])
            let after = try await db.client.query("SELECT version, checksum, applied_at FROM schema_migrations ORDER BY version")
            #expect(before.count == migrator.migrations.count)
            #expect(zip(before, after).allSatisfy { (try? $0.decode((Int, String, Date).self) == $1.decode((Int, String, Date).self)) == true })
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
            let scratch = PostgresClient(configuration: .init(connection: .init(url: db.url + "&options=-csearch_path%3Dscratch"), maximumConnections: 2))
            defer { Task { await scratch.shutdown() } }
            #expect(try await Migrator(migrations: [second, first]).migrate(scratch) == ["0001_first.sql", "0002_second.sql"])
            #expect(try await Migrator(migrations: [first, second]).migrate(scratch) == [])
            #expect(try await scratch.query("SELECT count(*) FROM a").single().decode(Int.self, at: 0) == 1)

            let changed = try Migration(name: "0001_first.sql", sql: "CREATE TABLE a (n bigint);")
            let error = try await #require(throws: PostgresError.self) {
                try await Migrator(migrations: [changed, second]).migrate(scratch)
            }
            #expect(error.code == .migration)
            #expect(error.message.contains("0001_first.sql") && error.message.contains("changed"))
            await #expect(throws: PostgresError.self) { try await Migrator(migrations: [changed, second]).status(scratch) }

            // A failing migration leaves nothing behind: it ran in its own transaction.
            let broken = try Migration(name: "0003_broken.sql", sql: "CREATE TABLE c (n int); SELECT 1/0;")
            await #expect(throws: PostgresError.self) { try await Migrator(migrations: [first, second, broken]).migrate(scratch) }
            #expect(try await scratch.query("SELECT to_regclass('scratch.c') IS NULL").single().decode(Bool.self, at: 0))
            let status = try await Migrator(migrations: [first, second, broken]).status(scratch)
            #expect(status.map(\.state) == [.applied, .applied, .pending])
        }
    }
}
