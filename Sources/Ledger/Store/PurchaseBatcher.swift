import Postgres
import Synchronization

/// Runs group commit (`GroupCommit`): `PurchaseBatchState` decides, this sends the statements and
/// answers the callers.
///
/// A waiting caller whose task is cancelled (the server's request deadline, a hung database) is
/// answered at once with `CancellationError` and leaves the queue; if its batch is already running,
/// the batch goes on for the others and its result for this caller is dropped (the purchase may be
/// recorded, as with an abandoned single statement: posting it again finds it).
final class PurchaseBatcher: Sendable {
    typealias Outcome = Result<InsertResult, any Error>
    typealias State = PurchaseBatchState<PurchaseInput, TransactionKey, CheckedContinuation<Ticket, Never>>

    /// A store transaction's key: one statement records each at most once.
    struct TransactionKey: Hashable {
        let store: String
        let environment: String
        let transactionId: String
    }

    enum Ticket {
        /// Run alone now, in a slot of your own.
        case lead
        /// Your batch ran (or you were cancelled): the outcome for you.
        case done(Outcome)
    }

    var statistics: State.Statistics { state.withLock { $0.statistics } }
    /// Callers queued for a slot now (tests wait for a purchase to have queued instead of sleeping).
    var queuedCount: Int { state.withLock { $0.queue.count } }

    let configuration: GroupCommit
    private let client: PostgresClient
    private let state = Mutex(State())

    init(configuration: GroupCommit, client: PostgresClient) {
        self.configuration = configuration
        self.client = client
    }

    /// Inserts a new purchase (alone or in a batch); throws what the single statement throws.
    func insert(_ input: PurchaseInput) async throws -> InsertResult {
        guard configuration.maxBatch > 1 else { return try await single(input) }
        let id = state.withLock { $0.takeID() }
        let key = TransactionKey(store: input.store, environment: input.environment, transactionId: input.transactionId)
        let ticket = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Ticket, Never>) in
                let arrival = state.withLock {
                    $0.arrive(
                        id: id, input: input, key: key, waiter: continuation,
                        maxInFlight: configuration.maxInFlight)
                }
                switch arrival {
                case .lead: continuation.resume(returning: .lead)
                case .cancelled: continuation.resume(returning: .done(.failure(CancellationError())))
                case .queued: break
                }
            }
        } onCancel: {
            state.withLock { $0.cancel(id) }?.resume(returning: .done(.failure(CancellationError())))
        }
        state.withLock { $0.finished(id) }
        switch ticket {
        case .lead:
            defer { slotFinished() }
            return try await single(input)
        case .done(let outcome):
            return try outcome.get()
        }
    }

    private func single(_ input: PurchaseInput) async throws -> InsertResult {
        try await client.query(PurchaseStatement.single(input, lockingTransaction: false)).single().insertResult()
    }

    private func deliver(_ id: UInt64, _ outcome: Outcome) {
        state.withLock { $0.answer(id) }?.resume(returning: .done(outcome))
    }

    /// A statement finished: its slot takes the next batch, or is freed when nobody waits.
    private func slotFinished() {
        let batch = state.withLock { $0.slotFinished(maxBatch: configuration.maxBatch) }
        guard !batch.isEmpty else { return }
        Task { await run(batch) }
    }

    private func run(_ batch: [State.Queued]) async {
        defer { slotFinished() }
        if batch.count > 1,
            let results = try? await client.query(PurchaseStatement.batch(batch.map(\.input))).map({
                try $0.insertResult()
            }),
            results.count == batch.count
        {
            state.withLock { $0.batchSucceeded(size: batch.count) }
            for (queued, result) in zip(batch, results) { deliver(queued.id, .success(result)) }
            return
        }
        // Alone, or the batch failed: one by one, each with its own outcome (none for callers who
        // have gone).
        if batch.count > 1 { state.withLock { $0.batchFailed() } }
        for queued in batch where state.withLock({ $0.isWaiting(queued.id) }) {
            let outcome: Outcome
            do {
                outcome = .success(try await single(queued.input))
            } catch {
                outcome = .failure(error)
            }
            deliver(queued.id, outcome)
        }
    }
}
