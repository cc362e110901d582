import Foundation
import Postgres
import Receipts
import Synchronization
import TestSupport
import Testing

@testable import Ledger

@Suite("Concurrent writers")
struct ConcurrencyTests {
    @Test("64 concurrent identical submissions by one user: one purchase, one entry, 63 duplicates")
    func identicalSubmissions() async throws {
        try await withLedger(maximumConnections: 16) { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            let transaction = makeTransaction("c1", item: .background(6))
            let outcomes = try await withThrowingTaskGroup(of: PurchaseOutcome.self) { group in
                for _ in 0..<64 { group.addTask { try await ledger.recordPurchase(transaction, for: "alice") } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.filter(\.isRecorded).count == 1)
            #expect(outcomes.filter(\.isDuplicate).count == 63)
            let recorded = try #require(outcomes.first(where: \.isRecorded)?.purchase)
            #expect(outcomes.allSatisfy { $0.purchase == recorded })
            #expect(try await scalar(db.client, "SELECT count(*) FROM purchases") == 1)
            #expect(try await scalar(db.client, "SELECT count(*) FROM journal_entries") == 1)
            #expect(try await scalar(db.client, "SELECT count(*) FROM postings") == 2)
            #expect(try await scalar(db.client, "SELECT purchased_count FROM grants WHERE item_index = 6") == 1)
        }
    }

    @Test("the same transaction from two users at once: exactly one owner, the other a conflict")
    func twoUsersOneTransaction() async throws {
        try await withLedger(maximumConnections: 8) { db, ledger in
            for round in 0..<25 {
                let (a, b) = ("a\(round)", "b\(round)")
                _ = try await ledger.register(uid: a, profile: testProfile)
                _ = try await ledger.register(uid: b, profile: testProfile)
                let transaction = makeTransaction("c2-\(round)", item: .face(3))
                async let first = ledger.recordPurchase(transaction, for: a)
                async let second = ledger.recordPurchase(transaction, for: b)
                let outcomes = try await [first, second]
                #expect(outcomes.filter(\.isRecorded).count == 1, "round \(round)")
                #expect(outcomes.filter { $0.conflict == .ownedByAnotherUser }.count == 1, "round \(round)")
                let owner = outcomes[0].isRecorded ? a : b
                let loser = owner == a ? b : a
                #expect(try await ledger.inventory(of: owner).faces == [0, 3])
                #expect(try await ledger.inventory(of: loser).faces == [0])
            }
            #expect(try await scalar(db.client, "SELECT count(*) FROM journal_entries") == 25)
        }
    }

    @Test("a refund racing its purchase is always applied, whichever commits first")
    func refundRacingPurchase() async throws {
        try await withLedger(maximumConnections: 8) { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            let rounds = 60
            try await withThrowingTaskGroup(of: Void.self) { group in
                for round in 0..<rounds {
                    let id = "race\(round)"
                    group.addTask {
                        let outcome = try await ledger.recordPurchase(
                            makeTransaction(id, item: .face(1 + round % 4)), for: "alice")
                        #expect(outcome.isRecorded)
                    }
                    group.addTask {
                        let outcome = try await ledger.recordRefundEvent(makeRefundEvent("ev-\(id)", .refund, for: id))
                        #expect(outcome == .parked || outcome == .applied(.refunded), "\(outcome)")
                    }
                }
                try await group.waitForAll()
            }
            let states = try await ledger.purchaseHistory(of: "alice").map(\.state)
            #expect(states.count == rounds)
            #expect(states.allSatisfy { $0 == .refunded })
            #expect(try await scalar(db.client, "SELECT count(*) FROM journal_entries WHERE kind = 'refund'") == rounds)
            #expect(try await ledger.inventory(of: "alice").faces == [0])
        }
    }

    @Test("concurrent different refund events of one purchase post one refund")
    func concurrentRefundEvents() async throws {
        try await withLedger(maximumConnections: 8) { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("multi"), for: "alice")
            let outcomes = try await withThrowingTaskGroup(of: RefundEventOutcome.self) { group in
                for index in 0..<16 {
                    group.addTask {
                        try await ledger.recordRefundEvent(
                            makeRefundEvent("m\(index)", .refund, for: "multi", second: index))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.allSatisfy { $0 == .applied(.refunded) })
            #expect(try await scalar(db.client, "SELECT count(*) FROM journal_entries WHERE kind = 'refund'") == 1)
            #expect(try await scalar(db.client, "SELECT count(*) FROM refund_events") == 16)
        }
    }

    @Test("purchases of one item by one user in parallel add up in the grant")
    func parallelPurchasesOfOneItem() async throws {
        try await withLedger(maximumConnections: 8) { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<32 {
                    group.addTask {
                        _ = try await ledger.recordPurchase(makeTransaction("p\(index)", item: .face(2)), for: "alice")
                    }
                }
                try await group.waitForAll()
            }
            #expect(
                try await scalar(
                    db.client, "SELECT purchased_count FROM grants WHERE item_index = 2 AND item_kind = 'face'") == 32)
            #expect(try await balances(db.client)["receivable:app_store"] == 32 * 2_500_000)
        }
    }

    @Test("refund events whose transactions overlap still post one refund: they queue on the transaction's lock")
    func overlappingRefundEvents() async throws {
        try await withLedger(maximumConnections: 8) { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("overlap"), for: "alice")
            // Each event waits after its first statement until all four got there (or 300 ms passed),
            // so without the lock their applications would run side by side.
            let barrier = Barrier(parties: 4, timeout: .milliseconds(300))
            let slowed = LedgerStore(client: db.client, betweenStatements: { _, _ in await barrier.arrive() })
            let outcomes = try await withThrowingTaskGroup(of: RefundEventOutcome.self) { group in
                for index in 0..<4 {
                    group.addTask {
                        try await slowed.recordRefundEvent(
                            makeRefundEvent("o\(index)", .refund, for: "overlap", second: index))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.allSatisfy { $0 == .applied(.refunded) }, "\(outcomes)")
            #expect(try await scalar(db.client, "SELECT count(*) FROM journal_entries WHERE kind = 'refund'") == 1)
        }
    }

    @Test("a purchase arriving while a refund event's transaction is open waits for it and applies it")
    func purchaseDuringOpenRefund() async throws {
        try await withLedger(maximumConnections: 8) { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            // The refund's transaction stays open (its row lock taken) until the purchase waits on it.
            let (opened, open) = AsyncStream<Void>.makeStream()
            let slowed = LedgerStore(
                client: db.client,
                betweenStatements: { _, _ in
                    open.yield()
                    try await waitForLockWaiters(db, 1)
                })
            async let refund = slowed.recordRefundEvent(makeRefundEvent("open", .refund, for: "late"))
            for await _ in opened { break }
            let purchase = try await ledger.recordPurchase(makeTransaction("late"), for: "alice")
            #expect(try await refund == .parked)
            #expect(purchase.purchase?.state == .refunded)
            #expect(try await ledger.inventory(of: "alice").faces == [0])
        }
    }
}

/// Lets up to `parties` callers wait for each other, each for at most `timeout`.
final class Barrier: Sendable {
    private let arrived = Mutex(0)
    let parties: Int
    let timeout: Duration

    init(parties: Int, timeout: Duration) {
        self.parties = parties
        self.timeout = timeout
    }

    func arrive() async {
        arrived.withLock { $0 += 1 }
        let deadline = ContinuousClock.now + timeout
        while arrived.withLock({ $0 }) < parties, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}
