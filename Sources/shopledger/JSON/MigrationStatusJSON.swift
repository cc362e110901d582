import APIViews
import Foundation
import Postgres

/// `migrate --status --json`: each migration, whether it is applied and when, and the counts a
/// deploy script checks (`pending == 0` before it starts a server that refuses an older schema).
struct MigrationStatusJSON: Encodable {
    struct Migration: Encodable {
        let version: Int
        let name: String
        let state: String
        @NullWhenNil var appliedAt: Date?
        enum CodingKeys: String, CodingKey {
            case version, name, state, appliedAt = "applied_at"
        }
    }

    let migrations: [Migration]
    let applied: Int
    let pending: Int

    init(_ status: [Migrator.Status]) {
        migrations = status.map {
            Migration(version: $0.version, name: $0.name, state: $0.state.rawValue, appliedAt: $0.appliedAt)
        }
        applied = status.count { $0.state == .applied }
        pending = status.count { $0.state == .pending }
    }
}
