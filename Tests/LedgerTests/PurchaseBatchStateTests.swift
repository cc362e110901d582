import Testing

@testable import Ledger

/// Group commit's queue on its own: inputs are names, keys are transaction ids, waiters are names; no
/// database, no task. Each test drives the transitions `PurchaseBatcher` makes and checks what it is
/// told to do.
@Suite("PurchaseBatchState: group commit's transitions without a database")
struct PurchaseBatchStateTests {
    typealias State = PurchaseBatchState<String, String, String>

    /// Arrives `input` (its key the text before any "#") with a fresh id; the arrival and the id.
    private func arrive(_ state: inout State, _ input: String, maxInFlight: Int = 1) -> (State.Arrival, UInt64) {
        let id = state.takeID()
        let key = String(input.split(separator: "#")[0])
        return (
            state.arrive(id: id, input: input, key: key, waiter: "waiter of \(input)", maxInFlight: maxInFlight), id
        )
    }

    @Test("an idle batcher lets a purchase run alone at once; the next ones queue until the slot frees")
    func leadsThenQueues() {
        var state = State()
        #expect(arrive(&state, "a").0 == .lead)
        #expect(arrive(&state, "b").0 == .queued)
        #expect(arrive(&state, "c").0 == .queued)
        #expect(state.inFlight == 1)
        #expect(state.queue.map(\.input) == ["b", "c"])
    }

    @Test("maxInFlight statements run at once before anyone queues")
    func maxInFlight() {
        var state = State()
        #expect(arrive(&state, "a", maxInFlight: 2).0 == .lead)
        #expect(arrive(&state, "b", maxInFlight: 2).0 == .lead)
        #expect(arrive(&state, "c", maxInFlight: 2).0 == .queued)
        #expect(state.inFlight == 2)
    }

    @Test("a finished statement's slot takes the queue's first maxBatch purchases, in order")
    func batchOfAtMostMax() {
        var state = State()
        _ = arrive(&state, "lead")
        for name in ["a", "b", "c", "d", "e"] { _ = arrive(&state, name) }
        #expect(state.slotFinished(maxBatch: 3).map(\.input) == ["a", "b", "c"])
        #expect(state.inFlight == 1, "the slot stays taken by the batch")
        #expect(state.slotFinished(maxBatch: 3).map(\.input) == ["d", "e"])
        #expect(state.slotFinished(maxBatch: 3).isEmpty)
        #expect(state.inFlight == 0, "with nobody waiting the slot is freed")
        #expect(arrive(&state, "f").0 == .lead)
    }

    @Test("a second purchase of one transaction waits for the next batch, keeping its place")
    func distinctTransactionsPerBatch() {
        var state = State()
        _ = arrive(&state, "lead")
        for name in ["t1#first", "t2", "t1#again", "t3"] { _ = arrive(&state, name) }
        #expect(state.slotFinished(maxBatch: 32).map(\.input) == ["t1#first", "t2", "t3"])
        #expect(state.slotFinished(maxBatch: 32).map(\.input) == ["t1#again"])
    }

    @Test("each waiter is answered once: a cancelled one leaves the queue, and is not answered again")
    func cancelQueued() {
        var state = State()
        _ = arrive(&state, "lead")
        let (_, b) = arrive(&state, "b")
        let (_, c) = arrive(&state, "c")
        #expect(state.cancel(b) == "waiter of b")
        #expect(state.queue.map(\.input) == ["c"])
        #expect(state.answer(b) == nil)
        #expect(!state.isWaiting(b) && state.isWaiting(c))
        let batch = state.slotFinished(maxBatch: 32)
        #expect(batch.map(\.id) == [c])
        #expect(state.answer(c) == "waiter of c")
        #expect(state.answer(c) == nil)
    }

    @Test("cancelled while its batch runs: answered with the cancellation now, its batch's result dropped")
    func cancelRunning() {
        var state = State()
        _ = arrive(&state, "lead")
        let (_, b) = arrive(&state, "b")
        _ = state.slotFinished(maxBatch: 32)
        #expect(state.isWaiting(b))
        #expect(state.cancel(b) == "waiter of b")
        #expect(!state.isWaiting(b), "the batch's one-by-one retry skips it")
        #expect(state.answer(b) == nil, "the batch's result finds nobody to answer")
    }

    @Test("a cancellation before arrival refuses the arrival, without taking a slot or a place")
    func cancelBeforeArrival() {
        var state = State()
        let id = state.takeID()
        #expect(state.cancel(id) == nil)
        #expect(state.arrive(id: id, input: "a", key: "a", waiter: "w", maxInFlight: 1) == .cancelled)
        #expect(state.inFlight == 0 && state.queue.isEmpty)
        #expect(arrive(&state, "b").0 == .lead)
    }

    @Test("a cancellation after the answer leaves no mark once the caller finished")
    func cancelAfterAnswer() {
        var state = State()
        let (arrival, id) = arrive(&state, "a")
        #expect(arrival == .lead)
        #expect(state.cancel(id) == nil, "a leader does not wait: nothing to answer")
        state.finished(id)
        // The mark is gone: the same id arriving again (it cannot, ids are fresh) would not be refused.
        #expect(state.arrive(id: id, input: "a", key: "a", waiter: "w", maxInFlight: 2) == .lead)
    }

    @Test("statistics count batches, the purchases they recorded, the largest, and failures")
    func statistics() {
        var state = State()
        state.batchSucceeded(size: 3)
        state.batchSucceeded(size: 5)
        state.batchFailed()
        #expect(
            state.statistics == .init(batches: 2, batchedPurchases: 8, largestBatch: 5, failedBatches: 1))
    }
}
