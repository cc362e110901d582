import Foundation

/// One backup pgBackRest took of the shop's cluster, as `pgbackrest info --output=json` lists it and
/// the `backups` table records it (migration 0019).
public struct BackupRecord: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable { case full, diff, incr }

    public let stanza: String
    /// pgBackRest's label: `20261129-033001F`, or `…F_20261130-033002D` for a differential.
    public let label: String
    public let kind: Kind
    public let startedAt: Date
    public let stoppedAt: Date
    /// The cluster's size when backed up.
    public let databaseBytes: Int64
    /// What this backup added to the repository (compressed; a diff or incr only what changed).
    public let repositoryBytes: Int64
    /// The first and last WAL segments the backup needs to be consistent.
    public let walStart: String
    public let walStop: String

    public init(
        stanza: String, label: String, kind: Kind, startedAt: Date, stoppedAt: Date, databaseBytes: Int64,
        repositoryBytes: Int64, walStart: String, walStop: String
    ) {
        self.stanza = stanza
        self.label = label
        self.kind = kind
        self.startedAt = startedAt
        self.stoppedAt = stoppedAt
        self.databaseBytes = databaseBytes
        self.repositoryBytes = repositoryBytes
        self.walStart = walStart
        self.walStop = walStop
    }
}
