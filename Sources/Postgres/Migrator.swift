import Crypto
import Foundation
import Logging

/// One numbered schema change: `NNNN_description.sql`.
public struct Migration: Sendable, Hashable {
    public let version: Int
    public let name: String
    public let sql: String
    /// SHA-256 of the file's text, hex.
    public let checksum: String

    /// Parses the version from the file name's leading digits (`0001_ledger.sql` → 1).
    public init(name: String, sql: String) throws {
        let digits = name.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, let version = Int(digits), version > 0 else {
            throw PostgresError(
                code: .migration, message: "migration file \(name) must start with its number, e.g. 0001_name.sql")
        }
        self.version = version
        self.name = name
        self.sql = sql
        self.checksum = SHA256.hash(data: Data(sql.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}

/// Applies migrations in order, each once, each in its own transaction, recording them in
/// `schema_migrations` with their checksum. An applied migration whose text changed since is refused:
/// schema history is append-only, like the ledger.
public struct Migrator: Sendable {
    public enum State: String, Sendable { case applied, pending }

    public struct Status: Sendable, Hashable {
        public let version: Int
        public let name: String
        public let state: State
        public let appliedAt: Date?
    }

    public let migrations: [Migration]
    let logger: Logger

    public init(migrations: [Migration], logger: Logger = Logger(label: "shopledger.migrations")) throws {
        let sorted = migrations.sorted { $0.version < $1.version }
        for (previous, next) in zip(sorted, sorted.dropFirst()) where previous.version == next.version {
            throw PostgresError(
                code: .migration, message: "migrations \(previous.name) and \(next.name) share number \(next.version)")
        }
        self.migrations = sorted
        self.logger = logger
    }

    /// Applies every pending migration (or those numbered up to `version`, to build an older
    /// schema, e.g. for a benchmark comparing it with the current one); returns the names applied
    /// (empty when up to date).
    @discardableResult
    public func migrate(_ client: PostgresClient, upTo version: Int? = nil) async throws -> [String] {
        try await ensureTable(client)
        var applied: [String] = []
        for migration in migrations where version.map({ migration.version <= $0 }) ?? true {
            let didApply = try await client.withTransaction { connection in
                // Serializes concurrent migrators (two processes starting at once); the second waits,
                // then finds the migration recorded and skips it.
                try await connection.query("LOCK TABLE schema_migrations IN EXCLUSIVE MODE")
                let recorded = try await recordedMigrations(connection)
                try verify(recorded)
                if recorded[migration.version] != nil { return false }
                try await connection.executeScript(unsafeSQL: migration.sql)
                try await connection.query(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES (\(migration.version), \(migration.name), \(migration.checksum))"
                )
                return true
            }
            if didApply {
                logger.info("applied migration", metadata: ["migration": "\(migration.name)"])
                applied.append(migration.name)
            }
        }
        if applied.isEmpty {
            // Nothing to apply still means: nothing applied has changed.
            try verify(try await client.withConnection { try await recordedMigrations($0) })
        }
        return applied
    }

    /// Each known migration with whether it is applied; fails like `migrate` on a changed file.
    public func status(_ client: PostgresClient) async throws -> [Status] {
        try await ensureTable(client)
        let recorded = try await client.withConnection { try await recordedMigrations($0) }
        try verify(recorded)
        return migrations.map { migration in
            let row = recorded[migration.version]
            return Status(
                version: migration.version, name: migration.name, state: row == nil ? .pending : .applied,
                appliedAt: row?.appliedAt)
        }
    }

    private struct Recorded {
        let name: String
        let checksum: String
        let appliedAt: Date
    }

    private func ensureTable(_ client: PostgresClient) async throws {
        try await client.query(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version integer PRIMARY KEY,
                name text NOT NULL,
                checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
    }

    private func recordedMigrations(_ connection: PostgresConnection) async throws -> [Int: Recorded] {
        var recorded: [Int: Recorded] = [:]
        for row in try await connection.query("SELECT version, name, checksum, applied_at FROM schema_migrations") {
            let (version, name, checksum, appliedAt) = try row.decode((Int, String, String, Date).self)
            recorded[version] = Recorded(name: name, checksum: checksum, appliedAt: appliedAt)
        }
        return recorded
    }

    private func verify(_ recorded: [Int: Recorded]) throws {
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        for (version, row) in recorded.sorted(by: { $0.key < $1.key }) {
            guard let migration = known[version] else {
                throw PostgresError(
                    code: .migration,
                    message:
                        "the database has migration \(row.name) applied, which this build does not know; run a newer build"
                )
            }
            guard migration.checksum == row.checksum else {
                throw PostgresError(
                    code: .migration,
                    message:
                        "migration \(migration.name) changed after it was applied (applied checksum \(row.checksum.prefix(12)), "
                        + "file checksum \(migration.checksum.prefix(12))); applied migrations are immutable: add a new migration instead"
                )
            }
        }
    }
}
