/// Group commit for new purchases: purchases that arrive while the database is busy with earlier
/// ones are recorded together, by one statement (and one commit) for up to `maxBatch` of them.
///
/// - A purchase that finds fewer than `maxInFlight` purchase statements running goes at once, alone
///   (the single statement): an idle server adds no latency.
/// - One at a time by default: at 8 connections, where the server and PostgreSQL share two busy
///   cores, letting 4 statements run at once left most purchases alone (~170–190 µs of PostgreSQL
///   CPU each), while one at a time gathers those that arrive during a statement and its commit
///   (~95–120 µs each; LoadBench's CPU per request, docs/measurements.md).
/// - Otherwise it waits in a queue; whenever a running statement finishes, the queue's first
///   `maxBatch` purchases (distinct transactions) go as one statement.
/// - Each caller is answered only after the statement that recorded its purchase committed, with its
///   own result (recorded, or not inserted: then `recordPurchase` classifies it as before).
/// - If a batch fails (a refund event came first for one of them, two first purchases of one user
///   with different appAccountTokens, a deadlock, a bad value, …) its purchases are retried one by one
///   with the single statement, so each gets its own outcome.
///
/// The queue's bookkeeping is `PurchaseBatchState` (a state machine, tested without a database);
/// `PurchaseBatcher` runs it.
public struct GroupCommit: Sendable, Hashable {
    /// The most purchases one statement records; 1 turns group commit off.
    public var maxBatch: Int
    /// How many purchase statements may run at once before purchases queue for a batch.
    public var maxInFlight: Int

    public init(maxBatch: Int = 32, maxInFlight: Int = 1) {
        self.maxBatch = max(1, maxBatch)
        self.maxInFlight = max(1, maxInFlight)
    }

    /// Every purchase alone, as before group commit.
    public static let off = GroupCommit(maxBatch: 1)
}
