import APIViews

/// `standby status --json`: where the standby is, what it has replayed, and how far behind the
/// primary it is; `behind_bytes` is null when the primary is not running or nothing was replayed yet.
struct StandbyStatusJSON: Encodable {
    let port: Int
    @NullWhenNil var replayedLSN: String?
    /// When the last transaction it replayed was committed on the primary (ISO 8601, UTC).
    @NullWhenNil var lastReplayedCommitAt: String?
    @NullWhenNil var behindBytes: Int?

    enum CodingKeys: String, CodingKey {
        case port, replayedLSN = "replayed_lsn", lastReplayedCommitAt = "last_replayed_commit_at"
        case behindBytes = "behind_bytes"
    }
}
