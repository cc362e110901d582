import Foundation
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Ledger

@Suite("Group commit")
struct GroupCommitTests {
    /// One statement at a time, so everything arriving meanwhile waits and goes as a batch.
    static let oneAtATime = GroupCommit(maxBatch: 32, maxInFlight: 1)

    @Test("purchases arriving together are recorded in batches, each answered with its own outcome")
    func batches() async throws {
        try await withLedger(maximumConnections: 16) { db, base in
            let ledger = LedgerStore(client: db.client, groupCommit: Self.oneAtATime)
            for user in 0..<10 { _ = try await ledger.register(uid: "u\(user)", profile: testProfile) }
            let items: [ItemID] = [.face(1), .face(2), .background(1), .background(4)]
            // 80 new purchases by 10 users (several of the same item by one user: one grant
            // counted several times within a batch), 20 re-posts of p0 by its owner, 10 posts by u2
            // of a transaction u3 recorded before, 5 by a user who is not registered.
            #expect(try await ledger.recordPurchase(makeTransaction("owned", item: .face(4)), for: "u3").isRecorded)
            var calls: [(String, VerifiedTransaction, String)] = []
            for number in 0..<80 {
                let user = "u\(number % 10)"
                calls.append(("new", makeTransaction("p\(number)", item: items[number % 4]), user))
            }
            for _ in 0..<20 { calls.append(("duplicate", makeTransaction("p0", item: items[0]), "u0")) }
            for _ in 0..<10 { calls.append(("conflict", makeTransaction("owned", item: .face(4)), "u2")) }
            for number in 0..<5 { calls.append(("unregistered", makeTransaction("x\(number)"), "nobody")) }
            calls.shuffle()
            let outcomes = await withTaskGroup(of: (String, Result<PurchaseOutcome, any Error>).self) { group in
                for (kind, transaction, uid) in calls {
                    group.addTask {
                        do { return (kind, .success(try await ledger.recordPurchase(transaction, for: uid))) } catch {
                            return (kind, .failure(error))
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let new = outcomes.filter { $0.0 == "new" }.compactMap { try? $0.1.get() }
            let p0 = outcomes.filter { $0.0 == "duplicate" }.compactMap { try? $0.1.get() }
            // p0's own "new" call and its 20 re-posts: one recorded among all 21.
            #expect(new.count == 80)
            #expect((new + p0).filter(\.isRecorded).count == 80)
            #expect((new + p0).filter(\.isDuplicate).count == 21 - 1)
            #expect(
                outcomes.filter { $0.0 == "conflict" }.allSatisfy { (try? $0.1.get())?.conflict == .ownedByAnotherUser }
            )
            #expect(
                outcomes.filter { $0.0 == "unregistered" }.allSatisfy {
                    if case .failure(let error as LedgerError) = $0.1 { return error.code == .userNotRegistered }
                    return false
                })
            #expect(try await scalar(db.client, "SELECT count(*) FROM purchases") == 81)
            #expect(try await scalar(db.client, "SELECT count(*) FROM journal_entries") == 81)
            #expect(try await scalar(db.client, "SELECT sum(purchased_count) FROM grants") == 81)
            for user in 0..<10 {
                let bought = try await base.purchaseHistory(of: "u\(user)").count
                #expect(bought == (user == 3 ? 9 : 8), "u\(user)")
            }
            let statistics = ledger.batcher.statistics
            #expect(statistics.batches > 0, "\(statistics)")
            #expect(statistics.largestBatch <= 32)
            // The invariants (withLedger) prove the journal, postings and grants agree.
        }
    }

    @Test("a batch holding a purchase whose refund came first fails, and is retried one by one")
    func refundFirstInABatch() async throws {
        try await withLedger(maximumConnections: 16) { db, _ in
            let ledger = LedgerStore(client: db.client, groupCommit: Self.oneAtATime)
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordRefundEvent(makeRefundEvent("e-early", .refund, for: "r7"))
            for round in 0..<5 {
                let outcomes = try await withThrowingTaskGroup(of: (String, PurchaseOutcome).self) { group in
                    for number in 0..<12 {
                        let id = number == 7 && round == 0 ? "r7" : "q\(round)-\(number)"
                        group.addTask { (id, try await ledger.recordPurchase(makeTransaction(id), for: "alice")) }
                    }
                    return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
                }
                let allRecorded = outcomes.values.allSatisfy { $0.isRecorded }
                #expect(allRecorded, "round \(round)")
                if round == 0 { #expect(outcomes["r7"]?.purchase?.state == .refunded) }
            }
            #expect(try await scalar(db.client, "SELECT count(*) FROM purchases") == 60)
            #expect(try await scalar(db.client, "SELECT count(*) FROM journal_entries WHERE kind = 'refund'") == 1)
        }
    }

    @Test("a queued purchase whose task is cancelled is answered at once; the others go on")
    func cancelledWhileQueued() async throws {
        try await withLedger(maximumConnections: 8) { db, _ in
            let ledger = LedgerStore(client: db.client, groupCommit: Self.oneAtATime)
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            // Another transaction holds alice's face 1 grant row until the test commits it, so the first
            // purchase (alone, in the only slot) waits on it and the next one queues.
            let holder = try await HeldTransaction(
                db, "INSERT INTO grants (uid, item_kind, item_index) VALUES ('alice', 'face', 1)")
            let first = Task { try await ledger.recordPurchase(makeTransaction("held", item: .face(1)), for: "alice") }
            try await waitForLockWaiters(db, 1)
            let queued = Task {
                try await ledger.recordPurchase(makeTransaction("queued", item: .face(2)), for: "alice")
            }
            try await waitUntil("the second purchase queued") { ledger.batcher.queuedCount == 1 }
            // Should the cancellation not answer it, the held row's commit would, late: a bound on a broken
            // test, not a time it measures.
            let fallback = Task {
                try await Task.sleep(for: .seconds(30))
                try await holder.commit()
            }
            defer { fallback.cancel() }
            queued.cancel()
            let result = await queued.result
            // Answered by the cancellation, not by the held row's commit (which waits for the test): that
            // commit would have let the purchase through.
            #expect(throws: CancellationError.self) { try result.get() }
            #expect(ledger.batcher.queuedCount == 0, "it left the queue")
            try await holder.commit()
            // The holder's grant row was committed, so the purchase adds to it.
            #expect(try await first.value.isRecorded)
            #expect(try await ledger.recordPurchase(makeTransaction("after", item: .face(3)), for: "alice").isRecorded)
            #expect(try await scalar(db.client, "SELECT count(*) FROM purchases WHERE transaction_id = 'queued'") == 0)
        }
    }

    @Test("an idle ledger records a purchase alone, at once")
    func alone() async throws {
        try await withLedger { db, _ in
            let ledger = LedgerStore(client: db.client, groupCommit: Self.oneAtATime)
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            for number in 0..<3 {
                #expect(try await ledger.recordPurchase(makeTransaction("solo\(number)"), for: "alice").isRecorded)
            }
            #expect(ledger.batcher.statistics.batches == 0)
        }
    }
}
