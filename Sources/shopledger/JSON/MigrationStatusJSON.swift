import APIViews
import BuildInfo
import Foundation
import Ledger
import Postgres

/// `migrate --status --json`: each migration, whether it is applied, when and by which release, whether
/// it is additive, and the counts a deploy script checks (`pending == 0` before it starts a server
/// that refuses an older schema; `newer` with `runnable` before it rolls back to this build).
struct MigrationStatusJSON: Encodable {
    struct Migration: Encodable {
        let version: Int
        let name: String
        let state: String
        let additive: Bool
        @NullWhenNil var appliedAt: Date?
        @NullWhenNil var appliedBy: String?
        enum CodingKeys: String, CodingKey {
            case version, name, state, additive, appliedAt = "applied_at", appliedBy = "applied_by"
        }
    }

    let migrations: [Migration]
    let applied: Int
    let pending: Int
    let newer: Int
    /// This build can run on the database: nothing newer that is not additive.
    let runnable: Bool

    init(_ status: [Migrator.Status]) {
        migrations = status.map {
            Migration(
                version: $0.version, name: $0.name, state: $0.state.rawValue, additive: $0.isAdditive,
                appliedAt: $0.appliedAt, appliedBy: $0.appliedBy)
        }
        applied = status.count { $0.state == .applied }
        pending = status.count { $0.state == .pending }
        newer = status.count { $0.state == .newer }
        runnable = !status.contains { $0.state == .newer && !$0.isAdditive }
    }
}

/// `shopledger --version --json`: the release, the commit, and the schema this build carries (each
/// migration with whether it is additive), so a deploy script can tell before an upgrade whether the
/// previous release could still run after it.
struct VersionJSON: Encodable {
    struct Migration: Encodable {
        let version: Int
        let name: String
        let additive: Bool
    }

    let version: String
    let commit: String
    let migrations: [Migration]
    /// The highest migration number this build knows.
    let schemaVersion: Int

    enum CodingKeys: String, CodingKey {
        case version, commit, migrations, schemaVersion = "schema_version"
    }

    init() throws {
        version = BuildInfo.version
        commit = BuildInfo.commit
        migrations = try LedgerSchema.migrations().sorted { $0.version < $1.version }.map {
            Migration(version: $0.version, name: $0.name, additive: $0.isAdditive)
        }
        schemaVersion = migrations.last?.version ?? 0
    }
}
