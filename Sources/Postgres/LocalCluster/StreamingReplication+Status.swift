import Foundation

extension StreamingReplication {
    /// A standby streaming from this server, as the primary's `pg_stat_replication` shows it.
    public struct Sender: Sendable, Hashable {
        /// The standby's `application_name` (its `cluster_name`: `shopledger_standby` for `shopledger standby`).
        public let name: String
        /// `streaming`, `catchup`, `startup`, `backup`, `stopping`.
        public let state: String
        /// `async`, `sync`, `potential`, `quorum`.
        public let syncState: String
        /// The WAL the standby replayed, and how many bytes of WAL the primary has written past it.
        public let replayLSN: String?
        public let bytesBehind: Int?
        /// How long ago the standby replayed the primary's last acknowledged commit (`replay_lag`).
        public let replayLagSeconds: Double?
    }

    /// What this server is in replication: a primary with the standbys streaming from it, or a standby
    /// with what it replayed (`shopledger standby status` asks a standby the same).
    public enum Role: Sendable, Equatable {
        case primary(standbys: [Sender])
        case standby(Replay)
    }

    /// This server's replication role: `pg_is_in_recovery()`, then `pg_stat_replication` on a primary
    /// (its rows are visible to superusers and `pg_monitor` members; others see none) or the replay
    /// position on a standby.
    public static func role(of client: PostgresClient) async throws -> Role {
        if try await isInRecovery(client) { return .standby(try await replay(on: client)) }
        let senders = try await client.query(
            """
            SELECT coalesce(application_name, ''), coalesce(state, ''), coalesce(sync_state, ''), replay_lsn::text,
                   pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint,
                   extract(epoch FROM replay_lag)::float8
            FROM pg_stat_replication ORDER BY application_name
            """
        ).map { row in
            let (name, state, syncState, lsn, behind, lag) = try row.decode(
                (String, String, String, String?, Int?, Double?).self)
            return Sender(
                name: name, state: state, syncState: syncState, replayLSN: lsn, bytesBehind: behind,
                replayLagSeconds: lag)
        }
        return .primary(standbys: senders)
    }
}
