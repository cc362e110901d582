import Foundation
import Postgres

/// The `backups` table (migration 0019): the backups pgBackRest took of this cluster, recorded by
/// `shopledger backups record` after each one, read by every server for
/// `shop_backup_last_success_timestamp_seconds`.
public struct BackupLog: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// What `record(_:)` did.
    public struct Outcome: Sendable {
        /// Backups recorded now, oldest first.
        public var recorded: [BackupRecord] = []
        /// Good backups of this cluster that were recorded before.
        public var alreadyRecorded = 0
        /// Backups not recorded, with why (an error pgBackRest found, another cluster's).
        public var skipped: [(label: String, why: String)] = []
    }

    /// The cluster's system identifier, as pgBackRest names it (`system-id`): the same on a restored
    /// or promoted copy, different for another cluster.
    public func systemIdentifier() async throws -> UInt64 {
        let value = try await client.query("SELECT system_identifier FROM pg_control_system()").single().decode(
            Int64.self, at: 0)
        return UInt64(bitPattern: value)
    }

    /// Records every backup `info` lists of this cluster without an error, each once; fails when it
    /// lists none (a wrong stanza or database: the servers would go on saying no backup was taken).
    public func record(_ info: PgBackRestInfo) async throws -> Outcome {
        let system = try await systemIdentifier()
        var outcome = Outcome()
        var good: [BackupRecord] = []
        for backup in info.backups {
            if backup.systemIdentifier != system {
                outcome.skipped.append(
                    (
                        backup.record.label,
                        "of another cluster (system-id \(backup.systemIdentifier), this is \(system))"
                    ))
            } else if backup.hasError {
                outcome.skipped.append((backup.record.label, "pgBackRest found an error in it (pgbackrest info)"))
            } else {
                good.append(backup.record)
            }
        }
        guard !good.isEmpty else {
            throw PgBackRestInfo.Failure(
                description: "stanza \(info.stanza) has no good backup of this database (system-id \(system); "
                    + "status: \(info.statusMessage); \(info.backups.count) listed)")
        }
        for backup in good.sorted(by: { $0.stoppedAt < $1.stoppedAt }) {
            if try await record(backup) { outcome.recorded.append(backup) } else { outcome.alreadyRecorded += 1 }
        }
        return outcome
    }

    /// Adds the backup; false when its label was recorded before (the row is never changed).
    @discardableResult
    public func record(_ backup: BackupRecord) async throws -> Bool {
        try await client.query(
            """
            INSERT INTO backups (stanza, label, type, started_at, stopped_at, database_bytes, repository_bytes,
                wal_start, wal_stop)
            VALUES (\(backup.stanza), \(backup.label), \(backup.kind.rawValue), \(backup.startedAt), \(backup.stoppedAt),
                \(backup.databaseBytes), \(backup.repositoryBytes), \(backup.walStart), \(backup.walStop))
            ON CONFLICT (stanza, label) DO NOTHING
            RETURNING label
            """
        ).count == 1
    }

    /// When the newest recorded backup ended; nil when none is recorded.
    public func lastBackupStop() async throws -> Date? {
        try await client.query("SELECT max(stopped_at) FROM backups").single().decode(Date?.self, at: 0)
    }

    /// The newest `limit` backups, newest first.
    public func newest(limit: Int) async throws -> [BackupRecord] {
        try await client.query(
            """
            SELECT stanza, label, type, started_at, stopped_at, database_bytes, repository_bytes, wal_start, wal_stop
            FROM backups ORDER BY stopped_at DESC, label DESC LIMIT \(limit)
            """
        ).map { row in
            let (stanza, label, type, started, stopped, databaseBytes, repositoryBytes, walStart, walStop) =
                try row.decode((String, String, String, Date, Date, Int64, Int64, String, String).self)
            return BackupRecord(
                stanza: stanza, label: label, kind: BackupRecord.Kind(rawValue: type) ?? .full, startedAt: started,
                stoppedAt: stopped, databaseBytes: databaseBytes, repositoryBytes: repositoryBytes, walStart: walStart,
                walStop: walStop)
        }
    }
}
