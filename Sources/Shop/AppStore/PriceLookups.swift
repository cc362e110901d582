import Receipts
import Synchronization

/// Apple's answers to the price lookups made inside purchase requests, shared by every request of the
/// server: a transaction that another request is asking Apple about now is not asked again (the
/// request waits for that answer), and a price Apple gave is remembered for ``memory``, until its
/// purchase is surely in the ledger. So duplicates posted all at once cost one call to Apple, not one
/// each (1,284 reposts of one receipt made 1,100 calls, the app's whole quota, before this).
///
/// What is remembered is bounded (``capacity`` transactions, oldest dropped first); a lookup that did
/// not price a transaction is not remembered (the purchase is then in the ledger unpriced, and a sync
/// prices it).
package final class PriceLookups: Sendable {
    /// What one request's lookup answered, by transaction id; empty when Apple was not asked or did not answer.
    package typealias Prices = [String: VerifiedTransaction]

    private struct Remembered {
        var transaction: VerifiedTransaction
        var at: ContinuousClock.Instant
    }

    private struct State {
        /// Transactions being asked about now, and the flight asking.
        var asking: [String: UInt64] = [:]
        /// Lookups going on now.
        var flights: Set<UInt64> = []
        /// Requests waiting for a flight's answer.
        var waiters: [UInt64: [UInt64: CheckedContinuation<Prices, Never>]] = [:]
        var remembered: [String: Remembered] = [:]
        /// Remembered transaction ids with when, oldest first (some dropped or refreshed since).
        var order: [(id: String, at: ContinuousClock.Instant)] = []
        var orderStart = 0
        var nextId: UInt64 = 0
    }

    package let memory: Duration
    package let capacity: Int
    private let now: @Sendable () -> ContinuousClock.Instant
    private let state = Mutex(State())

    package init(
        memory: Duration = .seconds(60), capacity: Int = 10_000,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
    ) {
        self.memory = memory
        self.capacity = max(1, capacity)
        self.now = now
    }

    /// The prices of `transactions` (by transaction id) that are remembered, that another request's
    /// lookup brings, or that `lookUp` finds for the rest, which it is called with once (not at all when
    /// nothing is left to ask). What nobody priced is missing from the answer.
    package func prices(
        of transactions: [VerifiedTransaction], lookUp: ([VerifiedTransaction]) async -> Prices
    ) async -> Prices {
        let now = now()
        let (known, flight, mine, others) = state.withLock { state in
            var known: Prices = [:]
            var mine: [VerifiedTransaction] = []
            var others: [UInt64: Set<String>] = [:]
            state.nextId += 1
            let flight = state.nextId
            for transaction in transactions {
                let id = transaction.transactionId
                if let remembered = state.remembered[id], now - remembered.at < memory {
                    known[id] = remembered.transaction
                } else if let asking = state.asking[id] {
                    others[asking, default: []].insert(id)
                } else {
                    state.asking[id] = flight
                    mine.append(transaction)
                }
            }
            if !mine.isEmpty { state.flights.insert(flight) }
            return (known, flight, mine, others)
        }
        var prices = known
        if !mine.isEmpty {
            let asked = Set(mine.map(\.transactionId))
            let answer = await lookUp(mine).filter { asked.contains($0.key) }
            finish(flight, asked: asked, answer: answer)
            prices.merge(answer) { first, _ in first }
        }
        for (other, ids) in others {
            prices.merge(await wait(for: other).filter { ids.contains($0.key) }) { first, _ in first }
        }
        return prices
    }

    /// How many prices are remembered now (for tests).
    package var rememberedCount: Int { state.withLock { $0.remembered.count } }

    private func finish(_ flight: UInt64, asked: Set<String>, answer: Prices) {
        let now = now()
        let waiters = state.withLock { state in
            for id in asked where state.asking[id] == flight { state.asking[id] = nil }
            state.flights.remove(flight)
            for (id, transaction) in answer {
                state.remembered[id] = Remembered(transaction: transaction, at: now)
                state.order.append((id, now))
            }
            forgetOld(&state, now: now)
            return state.waiters.removeValue(forKey: flight) ?? [:]
        }
        for waiter in waiters.values { waiter.resume(returning: answer) }
    }

    /// The answer of `flight`, another request's lookup; what is remembered of it if it has ended, and
    /// nothing if this request is cancelled first.
    private func wait(for flight: UInt64) async -> Prices {
        let waiter = state.withLock { state in
            state.nextId += 1
            return state.nextId
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ended = state.withLock { state -> Prices? in
                    // Ended already: its prices are remembered (and the caller takes only its own).
                    guard state.flights.contains(flight), !Task.isCancelled else {
                        return state.remembered.mapValues(\.transaction)
                    }
                    state.waiters[flight, default: [:]][waiter] = continuation
                    return nil
                }
                if let ended { continuation.resume(returning: ended) }
            }
        } onCancel: {
            let continuation = state.withLock { $0.waiters[flight]?.removeValue(forKey: waiter) }
            continuation?.resume(returning: [:])
        }
    }

    /// Drops what is older than ``memory``, and past ``capacity`` the oldest.
    private func forgetOld(_ state: inout State, now: ContinuousClock.Instant) {
        while state.orderStart < state.order.count {
            let (id, at) = state.order[state.orderStart]
            // Dropped, or remembered again since: a later place in the order stands for it.
            guard let remembered = state.remembered[id], remembered.at == at else {
                state.orderStart += 1
                continue
            }
            guard now - at >= memory || state.remembered.count > capacity else { break }
            state.remembered[id] = nil
            state.orderStart += 1
        }
        if state.orderStart > capacity {
            state.order.removeFirst(state.orderStart)
            state.orderStart = 0
        }
    }
}
