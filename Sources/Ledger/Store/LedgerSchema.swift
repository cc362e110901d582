import Logging
import Postgres

/// The ledger's schema: the migrations in `sql/migrations`, embedded in the binary at build time.
public enum LedgerSchema {
    public static func migrations() throws -> [Migration] {
        try embeddedMigrations.map { try Migration(name: $0.name, sql: $0.sql) }
    }

    public static func migrator(
        lockTimeout: Duration? = nil, logger: Logger = Logger(label: "shopledger.migrations")
    ) throws -> Migrator {
        try Migrator(migrations: migrations(), lockTimeout: lockTimeout, logger: logger)
    }
}
