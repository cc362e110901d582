import Foundation

/// PostgreSQL's streaming replication as `shopledger standby` drives it: the primary's synchronous
/// standby list, whether a standby streams, and how far one has replayed. The SQL lives here, with the
/// cluster it is about; the CLI only words the results.
public enum StreamingReplication {
    /// Where a standby is: the WAL it replayed and when the last replayed transaction committed.
    public struct Replay: Sendable, Equatable {
        /// `pg_last_wal_replay_lsn()`; nil before the standby replayed anything.
        public let lsn: String?
        /// `pg_last_xact_replay_timestamp()`; nil before a transaction was replayed.
        public let lastCommitAt: Date?
    }

    /// A standby did not reach the state asked for in time.
    public struct NotStreaming: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Sets (or, with nil, resets) the primary's `synchronous_standby_names` to `name` and reloads it.
    public static func setSynchronousStandby(_ name: String?, on primary: PostgresClient) async throws {
        if let name {
            let quoted = PostgresQuery.quoteIdentifier(name)
            try await primary.query(
                PostgresQuery(unsafeSQL: "ALTER SYSTEM SET synchronous_standby_names = '\(quoted)'"))
        } else {
            try await primary.query("ALTER SYSTEM RESET synchronous_standby_names")
        }
        try await primary.query("SELECT pg_reload_conf()")
    }

    /// The primary's `synchronous_standby_names`.
    public static func synchronousStandbyNames(on primary: PostgresClient) async throws -> String {
        try await primary.query("SHOW synchronous_standby_names").single().decode(String.self, at: 0)
    }

    /// Waits until the primary reports the standby named `name` (its `application_name`) streaming and,
    /// when `synchronous`, as its sync standby: a reload reaches the WAL sender a moment later, and until
    /// then a commit the primary acknowledges need not be on the standby.
    /// - Throws: ``NotStreaming`` naming the state last seen.
    public static func awaitStreaming(
        _ name: String, on primary: PostgresClient, synchronous: Bool, within limit: Duration = .seconds(30)
    ) async throws {
        let deadline = ContinuousClock.now + limit
        var seen = "no WAL sender"
        while ContinuousClock.now < deadline {
            let rows = try await primary.query(
                "SELECT state, sync_state FROM pg_stat_replication WHERE application_name = \(name)")
            if let row = rows.first {
                let state = try row.decode(String.self, column: "state")
                let syncState = try row.decode(String.self, column: "sync_state")
                if state == "streaming" && (!synchronous || syncState == "sync") { return }
                seen = "\(state), \(syncState)"
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw NotStreaming(
            description: "the standby did not stream from the primary within \(limit) (last seen: \(seen))")
    }

    /// Whether the server is in recovery (a standby).
    public static func isInRecovery(_ client: PostgresClient) async throws -> Bool {
        try await client.query("SELECT pg_is_in_recovery()").single().decode(Bool.self, at: 0)
    }

    /// How far the standby `client` is connected to has replayed.
    public static func replay(on standby: PostgresClient) async throws -> Replay {
        let (lsn, lastCommitAt) = try await standby.query(
            "SELECT pg_last_wal_replay_lsn()::text, pg_last_xact_replay_timestamp()"
        ).single().decode((String?, Date?).self)
        return Replay(lsn: lsn, lastCommitAt: lastCommitAt)
    }

    /// Bytes of WAL the primary has written past `lsn` (a standby's replay position).
    public static func bytesBehind(_ lsn: String, on primary: PostgresClient) async throws -> Int {
        try await primary.query("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), \(lsn)::pg_lsn)::bigint")
            .single().decode(Int.self, at: 0)
    }
}
