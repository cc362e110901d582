/// Group commit's bookkeeping as a state machine, in `PoolState`'s manner: generic over what is
/// recorded (`Input`, with the `Key` that makes two inputs the same transaction) and over who waits
/// for an answer (`Waiter`), so its transitions are tested without a database or a task
/// (`PurchaseBatchStateTests`).
///
/// `PurchaseBatcher` keeps it behind a lock. Every method is synchronous, never calls out and never
/// resumes anything: it returns what the caller must do once the lock is released (run alone, run a
/// batch, answer a waiter).
struct PurchaseBatchState<Input, Key: Hashable, Waiter> {
    /// What a newcomer does.
    enum Arrival: Equatable {
        /// Run alone now, in a slot of its own (then call ``slotFinished(maxBatch:)``).
        case lead
        /// Queued: its waiter is answered when its batch ran (``answer(_:)``) or it is cancelled.
        case queued
        /// Its task was cancelled before it arrived (the cancellation handler ran first).
        case cancelled
    }

    struct Queued {
        let id: UInt64
        let input: Input
        let key: Key
    }

    /// What the batcher did, for tests and benchmarks.
    struct Statistics: Sendable, Hashable {
        /// Statements that recorded several purchases, and how many they recorded in all.
        var batches = 0
        var batchedPurchases = 0
        var largestBatch = 0
        /// Batches that failed and were retried one by one.
        var failedBatches = 0
    }

    /// Statements running.
    private(set) var inFlight = 0
    private(set) var queue: [Queued] = []
    /// Every caller that waits (queued, or in a running batch).
    private var waiting: [UInt64: Waiter] = [:]
    /// Callers cancelled before they arrived.
    private var cancelledEarly: Set<UInt64> = []
    private var nextID: UInt64 = 0
    private(set) var statistics = Statistics()

    /// A new caller's id (taken before it arrives, so a cancellation can name it).
    mutating func takeID() -> UInt64 {
        nextID += 1
        return nextID
    }

    /// Caller `id` comes with `input`: it leads when fewer than `maxInFlight` statements run, else it
    /// queues with `waiter`.
    mutating func arrive(id: UInt64, input: Input, key: Key, waiter: Waiter, maxInFlight: Int) -> Arrival {
        if cancelledEarly.remove(id) != nil { return .cancelled }
        if inFlight < maxInFlight {
            inFlight += 1
            return .lead
        }
        queue.append(Queued(id: id, input: input, key: key))
        waiting[id] = waiter
        return .queued
    }

    /// Caller `id`'s task was cancelled: its waiter, to answer with the cancellation, when it waits (it
    /// leaves the queue; if its batch runs, its result will be dropped). Before it arrived, it is
    /// remembered and refused on arrival.
    mutating func cancel(_ id: UInt64) -> Waiter? {
        guard let waiter = waiting.removeValue(forKey: id) else {
            cancelledEarly.insert(id)
            return nil
        }
        queue.removeAll { $0.id == id }
        return waiter
    }

    /// Caller `id` has its answer: a cancellation that came after it leaves no mark.
    mutating func finished(_ id: UInt64) {
        cancelledEarly.remove(id)
    }

    /// The waiter to answer for caller `id`, unless it was answered already (cancelled).
    mutating func answer(_ id: UInt64) -> Waiter? {
        waiting.removeValue(forKey: id)
    }

    func isWaiting(_ id: UInt64) -> Bool { waiting[id] != nil }

    /// A statement finished: its slot takes the queue's next batch (the first `maxBatch` of distinct
    /// transactions; a second purchase of one transaction waits for the next batch, since one statement
    /// cannot both insert and find it), or is freed when nobody waits.
    mutating func slotFinished(maxBatch: Int) -> [Queued] {
        var batch: [Queued] = []
        var keys: Set<Key> = []
        var rest: [Queued] = []
        for queued in queue {
            if batch.count < maxBatch, keys.insert(queued.key).inserted {
                batch.append(queued)
            } else {
                rest.append(queued)
            }
        }
        queue = rest
        if batch.isEmpty { inFlight -= 1 }
        return batch
    }

    /// A batch of `size` purchases was recorded by one statement.
    mutating func batchSucceeded(size: Int) {
        statistics.batches += 1
        statistics.batchedPurchases += size
        statistics.largestBatch = max(statistics.largestBatch, size)
    }

    /// A batch failed; its purchases go one by one.
    mutating func batchFailed() {
        statistics.failedBatches += 1
    }
}
