import Crypto
import Foundation
import Logging

/// One numbered schema change: `NNNN_description.sql`.
///
/// A migration whose first lines carry the comment `-- shopledger: additive` declares that it only
/// adds (a table, a column with a default, an index, a function) and changes nothing an older
/// build relies on: an older build may run on a database that has it applied.
public struct Migration: Sendable, Hashable {
    public let version: Int
    public let name: String
    public let sql: String
    /// SHA-256 of the file's text, hex.
    public let checksum: String
    /// Marked `-- shopledger: additive` (see the type's comment).
    public let isAdditive: Bool

    static let additiveMarker = "-- shopledger: additive"

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
        self.isAdditive = sql.split(separator: "\n", maxSplits: 10).prefix(10).contains {
            $0.trimmingCharacters(in: .whitespaces) == Self.additiveMarker
        }
    }
}

/// Applies migrations in order, each once, each in its own transaction, recording them in
/// `schema_migrations` with their checksum. An applied migration whose text changed since is refused:
/// schema history is append-only, like the ledger.
///
/// Migrators starting together (two servers on a fresh database) are serialised by a
/// transaction-level advisory lock, taken first in every step, before even the bookkeeping table is
/// created; the others wait, then find the work done. With `lockTimeout`, a step waiting longer than
/// that for a table lock (a long transaction in the way) fails instead of queueing every query
/// behind it.
///
/// A database may carry migrations this build does not know (a newer build ran): when all of them
/// are additive (`Migration.isAdditive`, recorded with each) this build goes on, otherwise it refuses,
/// naming the release that applied the first one it cannot read (each row records the release of the
/// build that applied it, when that build said).
public struct Migrator: Sendable {
    /// `newer`: applied by a build that knew a migration this one does not.
    public enum State: String, Sendable { case applied, pending, newer }

    public struct Status: Sendable, Hashable {
        public let version: Int
        public let name: String
        public let state: State
        public let appliedAt: Date?
        /// The migration declares itself additive (for a `newer` one: as recorded when it was applied).
        public let isAdditive: Bool
        /// The release of the build that applied it; nil when pending or applied by a build that did not
        /// record its release (before 0.10.0).
        public let appliedBy: String?
    }

    public let migrations: [Migration]
    public var lockTimeout: Duration?
    /// This build's release, recorded with each migration it applies and named in refusals.
    public let release: String?
    let logger: Logger

    /// The advisory lock every migration step takes first ("SHOPLEDG").
    static let advisoryLockKey: Int64 = 0x5348_4f50_4c45_4447

    public init(
        migrations: [Migration], lockTimeout: Duration? = nil, release: String? = nil,
        logger: Logger = Logger(label: "shopledger.migrations")
    ) throws {
        let sorted = migrations.sorted { $0.version < $1.version }
        for (previous, next) in zip(sorted, sorted.dropFirst()) where previous.version == next.version {
            throw PostgresError(
                code: .migration, message: "migrations \(previous.name) and \(next.name) share number \(next.version)")
        }
        self.migrations = sorted
        self.lockTimeout = lockTimeout
        self.release = release
        self.logger = logger
    }

    /// Applies every pending migration (or those numbered up to `version`, to build an older
    /// schema, e.g. for a benchmark comparing it with the current one); returns the names applied
    /// (empty when up to date).
    @discardableResult
    public func migrate(_ client: PostgresClient, upTo version: Int? = nil) async throws -> [String] {
        var applied: [String] = []
        while let name = try await client.withTransaction(
            .init(), { connection in try await applyNext(connection, upTo: version) })
        {
            logger.info("applied migration", metadata: ["migration": "\(name)"])
            applied.append(name)
        }
        return applied
    }

    /// One step: under the advisory lock, the first pending migration applied and recorded; nil when
    /// none is pending (after checking that nothing applied has changed).
    private func applyNext(_ connection: PostgresConnection, upTo version: Int? = nil) async throws -> String? {
        // A pool's statement_timeout (serve's) must not cut a long migration, or the wait for another
        // server's; lock waits are bounded by `lockTimeout` instead.
        try await connection.query("SET LOCAL statement_timeout = 0")
        try await connection.query("SELECT pg_advisory_xact_lock(\(Self.advisoryLockKey))")
        if let lockTimeout {
            let (seconds, attoseconds) = lockTimeout.components
            let milliseconds = max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
            try await connection.query(PostgresQuery(unsafeSQL: "SET LOCAL lock_timeout = \(milliseconds)"))
        }
        try await connection.executeScript(
            unsafeSQL: """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version integer PRIMARY KEY,
                    name text NOT NULL,
                    checksum text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                );
                ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS additive boolean NOT NULL DEFAULT false;
                ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS release text;
                """)
        let recorded = try await recordedMigrations(connection)
        try verify(recorded)
        guard
            let migration = migrations.first(where: { migration in
                recorded[migration.version] == nil && (version.map { migration.version <= $0 } ?? true)
            })
        else { return nil }
        try await connection.executeScript(unsafeSQL: migration.sql)
        try await connection.query(
            """
            INSERT INTO schema_migrations (version, name, checksum, additive, release)
            VALUES (\(migration.version), \(migration.name), \(migration.checksum), \(migration.isAdditive),
                    \(release))
            """)
        return migration.name
    }

    /// Each known migration with whether it is applied, then those applied by a newer build; fails like
    /// `migrate` on a changed file or a newer migration that is not additive. Reads only: works on a
    /// read-only connection.
    public func status(_ client: PostgresClient) async throws -> [Status] {
        let recorded = try await recorded(client)
        try verify(recorded)
        return Self.statuses(migrations, recorded)
    }

    /// Like `status`, without refusing: what an operator looks at to decide what to run, even when
    /// this build cannot run on the database (a newer migration that is not additive).
    public func report(_ client: PostgresClient) async throws -> [Status] {
        Self.statuses(migrations, try await recorded(client))
    }

    private func recorded(_ client: PostgresClient) async throws -> [Int: Recorded] {
        try await client.withConnection { connection -> [Int: Recorded] in
            let exists = try await connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL").single()
                .decode(Bool.self, at: 0)
            return exists ? try await recordedMigrations(connection) : [:]
        }
    }

    private static func statuses(_ migrations: [Migration], _ recorded: [Int: Recorded]) -> [Status] {
        let known = Set(migrations.map(\.version))
        let mine = migrations.map { migration in
            let row = recorded[migration.version]
            return Status(
                version: migration.version, name: migration.name, state: row == nil ? .pending : .applied,
                appliedAt: row?.appliedAt, isAdditive: migration.isAdditive, appliedBy: row?.release)
        }
        let newer = recorded.filter { !known.contains($0.key) }.sorted { $0.key < $1.key }.map { version, row in
            Status(
                version: version, name: row.name, state: .newer, appliedAt: row.appliedAt, isAdditive: row.additive,
                appliedBy: row.release)
        }
        return mine + newer
    }

    /// For commands that must not change the schema (read-only tools): passes when every known
    /// migration is applied and nothing applied is unknown unless additive; otherwise says to run
    /// `migrate` (or a newer build). Reads only.
    public func requireCurrent(_ client: PostgresClient) async throws {
        let pending = try await status(client).filter { $0.state == .pending }.map(\.name)
        guard pending.isEmpty else {
            throw PostgresError(
                code: .migration,
                message: "the database lacks migrations \(pending.joined(separator: ", ")); run `shopledger migrate` "
                    + "(or start `shopledger serve`, which migrates) first")
        }
    }

    private struct Recorded {
        let name: String
        let checksum: String
        let appliedAt: Date
        let additive: Bool
        let release: String?
    }

    private func recordedMigrations(_ connection: PostgresConnection) async throws -> [Int: Recorded] {
        var recorded: [Int: Recorded] = [:]
        // `additive` and `release` through to_jsonb: a table made by an older build has no such column yet.
        let rows = try await connection.query(
            """
            SELECT version, name, checksum, applied_at, coalesce((to_jsonb(m) ->> 'additive')::boolean, false),
                   to_jsonb(m) ->> 'release'
            FROM schema_migrations m
            """)
        for row in rows {
            let (version, name, checksum, appliedAt, additive, release) = try row.decode(
                (Int, String, String, Date, Bool, String?).self)
            recorded[version] = Recorded(
                name: name, checksum: checksum, appliedAt: appliedAt, additive: additive, release: release)
        }
        return recorded
    }

    private func verify(_ recorded: [Int: Recorded]) throws {
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        var newerAdditive: [String] = []
        for (version, row) in recorded.sorted(by: { $0.key < $1.key }) {
            guard let migration = known[version] else {
                guard row.additive else {
                    let which = row.release.map { "shopledger \($0) or newer" } ?? "a newer build"
                    let mine = release.map { " (this is \($0))" } ?? ""
                    throw PostgresError(
                        code: .migration,
                        message:
                            "the database has migration \(row.name) applied\(row.release.map { " by shopledger \($0)" } ?? ""), "
                            + "which this build\(mine) does not know and which is not additive (an older build may misread "
                            + "the schema it changed); run \(which), or restore the backup taken before that upgrade "
                            + "to go back (docs/operations.md, Rolling back)")
                }
                newerAdditive.append(row.name)
                continue
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
        if !newerAdditive.isEmpty {
            logger.notice(
                "the database has newer additive migrations this build does not know; going on",
                metadata: ["migrations": "\(newerAdditive.joined(separator: ", "))"])
        }
    }
}
