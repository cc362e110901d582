import Logging
import Postgres

/// The ledger's schema: the migrations in `sql/migrations`, embedded in the binary at build time.
public enum LedgerSchema {
    public static func migrations() throws -> [Migration] {
        try embeddedMigrations.map { try Migration(name: $0.name, sql: $0.sql) }
    }

    /// - Parameter release: this build's release (the CLI's `BuildInfo.version`), recorded with each
    ///   migration applied and named when a newer schema is refused.
    public static func migrator(
        lockTimeout: Duration? = nil, release: String? = nil, logger: Logger = Logger(label: "shopledger.migrations")
    ) throws -> Migrator {
        try Migrator(migrations: migrations(), lockTimeout: lockTimeout, release: release, logger: logger)
    }
}
