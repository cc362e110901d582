import Foundation

/// What `pgbackrest --stanza=NAME info --output=json` says of one stanza: its status, the clusters it
/// has backed up (their system identifiers) and its backups. pgBackRest keeps this JSON stable across
/// releases ("kept stable unless a bug is found"); only the fields read here are decoded.
public struct PgBackRestInfo: Sendable {
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String

        public init(description: String) {
            self.description = description
        }
    }

    /// A backup as listed, with the cluster it was taken of.
    public struct Backup: Sendable, Hashable {
        public let record: BackupRecord
        /// The backed-up cluster's system identifier (`pg_control_system()`).
        public let systemIdentifier: UInt64
        /// pgBackRest found an error in it (a page checksum): not a good backup.
        public let hasError: Bool
    }

    public let stanza: String
    /// `status.code` 0 is "ok"; 2 is "no valid backups".
    public let statusCode: Int
    public let statusMessage: String
    public let backups: [Backup]

    /// The stanza `stanza` of the JSON `info --output=json` printed.
    public init(json: Data, stanza: String) throws {
        let stanzas: [Stanza]
        do {
            stanzas = try JSONDecoder().decode([Stanza].self, from: json)
        } catch {
            throw Failure(description: "pgbackrest info --output=json printed what is not its JSON: \(error)")
        }
        guard let found = stanzas.first(where: { $0.name == stanza }) else {
            throw Failure(
                description: "pgbackrest info lists no stanza \(stanza) (it lists: "
                    + "\(stanzas.map(\.name).joined(separator: ", ")))")
        }
        let systems = Dictionary(found.db.map { ($0.id, $0.systemID) }, uniquingKeysWith: { first, _ in first })
        self.stanza = stanza
        self.statusCode = found.status.code
        self.statusMessage = found.status.message
        self.backups = try found.backup.map { backup in
            guard let kind = BackupRecord.Kind(rawValue: backup.type) else {
                throw Failure(description: "backup \(backup.label) has an unknown type \(backup.type)")
            }
            guard let system = systems[backup.database.id] else {
                throw Failure(description: "backup \(backup.label) names database \(backup.database.id), not listed")
            }
            return Backup(
                record: BackupRecord(
                    stanza: stanza, label: backup.label, kind: kind,
                    startedAt: Date(timeIntervalSince1970: Double(backup.timestamp.start)),
                    stoppedAt: Date(timeIntervalSince1970: Double(backup.timestamp.stop)),
                    databaseBytes: backup.info.size, repositoryBytes: backup.info.repository.delta,
                    walStart: backup.archive.start, walStop: backup.archive.stop),
                systemIdentifier: system, hasError: backup.error ?? false)
        }
    }

    private struct Stanza: Decodable {
        let name: String
        let status: Status
        let db: [Database]
        let backup: [Backup]

        struct Status: Decodable {
            let code: Int
            let message: String
        }
        struct Database: Decodable {
            let id: Int
            let systemID: UInt64
            enum CodingKeys: String, CodingKey {
                case id
                case systemID = "system-id"
            }
        }
        struct Backup: Decodable {
            let label: String
            let type: String
            let timestamp: Range
            let archive: WAL
            let database: Reference
            let info: Sizes
            /// Absent before pgBackRest 2.36.
            let error: Bool?
        }
        struct Range: Decodable {
            let start: Int64
            let stop: Int64
        }
        struct WAL: Decodable {
            let start: String
            let stop: String
        }
        struct Reference: Decodable { let id: Int }
        struct Sizes: Decodable {
            let size: Int64
            let repository: Repository
            struct Repository: Decodable { let delta: Int64 }
        }
    }
}
