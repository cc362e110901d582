import Foundation
import Postgres
import Synchronization
import TestSupport
import Testing

@testable import Ledger

@Suite("A connection killed between statements")
struct FaultInjectionTests {
    /// A ledger whose multi-statement transactions lose their connection after the first statement:
    /// the server process is terminated from another connection (and waited for) before the next.
    func killingLedger(_ db: TestDatabase, killed: Counter) -> LedgerStore {
        LedgerStore(
            client: db.client,
            betweenStatements: { _, connection in
                let pid = try await connection.query("SELECT pg_backend_pid()").single().decode(Int.self, at: 0)
                let terminated = try await db.client.query("SELECT pg_terminate_backend(\(pid)::integer, 5000)")
                    .single()
                #expect(try terminated.decode(Bool.self, at: 0))
                killed.increment()
            })
    }

    @Test("a refund event whose connection dies before it is applied leaves nothing; sent again it applies")
    func refundEvent() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("k1"), for: "alice")
            let before = try await ledgerRowCounts(db.client)
            let killed = Counter()
            let error = try await #require(throws: PostgresError.self) {
                try await killingLedger(db, killed: killed).recordRefundEvent(makeRefundEvent("e1", .refund, for: "k1"))
            }
            #expect(killed.value == 1)
            #expect(error.isConnectionError, "\(error)")
            #expect(try await ledgerRowCounts(db.client) == before)
            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("e1", .refund, for: "k1")) == .applied(.refunded))
        }
    }

    @Test("a purchase applying a parked refund whose connection dies leaves no purchase, entry or grant")
    func purchaseAfterRefund() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            #expect(try await ledger.recordRefundEvent(makeRefundEvent("e1", .refund, for: "k2")) == .parked)
            let before = try await ledgerRowCounts(db.client)
            let killed = Counter()
            let error = try await #require(throws: PostgresError.self) {
                try await killingLedger(db, killed: killed).recordPurchase(makeTransaction("k2"), for: "alice")
            }
            #expect(killed.value == 1)
            #expect(error.isConnectionError, "\(error)")
            #expect(try await ledgerRowCounts(db.client) == before)
            #expect(try await ledger.inventory(of: "alice").faces == [0])
            let outcome = try await ledger.recordPurchase(makeTransaction("k2"), for: "alice")
            #expect(outcome.isRecorded)
            #expect(outcome.purchase?.state == .refunded)
        }
    }
}

/// A thread-safe counter for test callbacks.
final class Counter: Sendable {
    private let storage = Mutex(0)
    func increment() { storage.withLock { $0 += 1 } }
    var value: Int { storage.withLock { $0 } }
}
