import Foundation
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Ledger

@Suite("Refunds, reversals and family revokes")
struct RefundTests {
    @Test("a refund revokes the item and moves the money from receivable to refunds")
    func refund() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("r1", item: .face(3)), for: "alice")
            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("e1", .refund, for: "r1")) == .applied(.refunded))
            #expect(try await ledger.inventory(of: "alice").faces == [0])
            #expect(try await balances(db.client) == ["revenue:face": -2_500_000, "refunds:face": 2_500_000])
            #expect(try await ledger.purchaseHistory(of: "alice").first?.state == .refunded)
        }
    }

    @Test("refund, reversal, refund: three entries, the item follows, the money nets out")
    func refundReversalRefund() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("r2", item: .background(2)), for: "alice")
            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("e1", .refund, for: "r2", second: 10))
                    == .applied(.refunded))
            #expect(try await ledger.inventory(of: "alice").backgrounds == [0])
            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("e2", .refundReversal, for: "r2", second: 20))
                    == .applied(.live))
            #expect(try await ledger.inventory(of: "alice").backgrounds == [0, 2])
            #expect(
                try await balances(db.client) == ["receivable:app_store": 1_200_000, "revenue:background": -1_200_000])
            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("e3", .refund, for: "r2", second: 30))
                    == .applied(.refunded))
            #expect(try await ledger.inventory(of: "alice").backgrounds == [0])
            let kinds = try await db.client.query("SELECT kind FROM journal_entries ORDER BY seq").map {
                try $0.decode(String.self, at: 0)
            }
            #expect(kinds == ["purchase", "refund", "refund_reversal", "refund"])
            #expect(
                try await balances(db.client) == ["revenue:background": -1_200_000, "refunds:background": 1_200_000])
        }
    }

    @Test("a duplicate refund event changes nothing; a second refund of a refunded purchase posts nothing")
    func duplicateRefundEvents() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("r3"), for: "alice")
            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("e1", .refund, for: "r3")) == .applied(.refunded))
            let before = try await ledgerRowCounts(db.client)
            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("e1", .refund, for: "r3")) == .duplicate(.refunded))
            #expect(try await ledgerRowCounts(db.client) == before)
            // Another event id saying the same thing: recorded, but no second refund entry.
            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("e2", .refund, for: "r3", second: 200))
                    == .applied(.refunded))
            #expect(try await scalar(db.client, "SELECT count(*) FROM journal_entries WHERE kind = 'refund'") == 1)
            // The same event id for another transaction or kind is a conflict.
            #expect(try await ledger.recordRefundEvent(makeRefundEvent("e1", .refundReversal, for: "r3")) == .conflict)
            #expect(try await ledger.recordRefundEvent(makeRefundEvent("e1", .refund, for: "other")) == .conflict)
        }
    }

    @Test("a refund before its purchase is parked and applied when the purchase arrives")
    func refundBeforePurchase() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            #expect(try await ledger.recordRefundEvent(makeRefundEvent("e1", .refund, for: "r4")) == .parked)
            #expect(try await ledger.recordRefundEvent(makeRefundEvent("e1", .refund, for: "r4")) == .duplicate(nil))
            let outcome = try await ledger.recordPurchase(makeTransaction("r4", item: .face(1)), for: "alice")
            #expect(outcome.isRecorded)
            #expect(outcome.purchase?.state == .refunded)
            #expect(try await ledger.inventory(of: "alice").faces == [0])
            #expect(try await balances(db.client) == ["revenue:face": -1_200_000, "refunds:face": 1_200_000])
            // Posting it again is a duplicate that reports the refunded state.
            #expect(
                try await ledger.recordPurchase(makeTransaction("r4", item: .face(1)), for: "alice").purchase?.state
                    == .refunded)
        }
    }

    @Test("a refund and its reversal both before the purchase: the purchase arrives live, with no refund entries")
    func refundAndReversalBeforePurchase() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("e1", .refund, for: "r5", second: 10)) == .parked)
            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("e2", .refundReversal, for: "r5", second: 20))
                    == .parked)
            #expect(try await ledger.recordPurchase(makeTransaction("r5"), for: "alice").purchase?.state == .live)
            #expect(try await scalar(db.client, "SELECT count(*) FROM journal_entries") == 1)
        }
    }

    @Test("events delivered out of order: the latest signed one decides")
    func outOfOrderEvents() async throws {
        try await withLedger { _, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("r6"), for: "alice")
            // The reversal (signed later) arrives before the refund it reverses.
            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("e2", .refundReversal, for: "r6", second: 20))
                    == .applied(.live))
            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("e1", .refund, for: "r6", second: 10))
                    == .applied(.live))
            #expect(try await ledger.inventory(of: "alice").faces == [0, 1])
        }
    }

    @Test("two purchases of one item and one refund: the item is still owned")
    func stillOwnedAfterOneRefund() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("a", item: .face(2)), for: "alice")
            _ = try await ledger.recordPurchase(makeTransaction("b", item: .face(2)), for: "alice")
            _ = try await ledger.equip(face: 2, background: 0, for: "alice")
            #expect(try await ledger.recordRefundEvent(makeRefundEvent("e1", .refund, for: "a")) == .applied(.refunded))
            let inventory = try await ledger.inventory(of: "alice")
            #expect(inventory.faces == [0, 2])
            #expect(inventory.equipped.face == 2)
            #expect(try await ledger.recordRefundEvent(makeRefundEvent("e2", .refund, for: "b")) == .applied(.refunded))
            let after = try await ledger.inventory(of: "alice")
            #expect(after.faces == [0])
            #expect(after.equipped.face == 0, "a refunded item is un-equipped")
            #expect(
                try await scalar(db.client, "SELECT purchased_count FROM grants WHERE uid = 'alice' AND item_index = 2")
                    == 0)
        }
    }

    @Test("a family revoke removes only the shared grant; a revoke of a bought purchase changes nothing")
    func familyRevoke() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "kid", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("own", item: .background(5)), for: "kid")
            _ = try await ledger.recordPurchase(
                makeTransaction("shared", item: .background(5), ownership: .familyShared), for: "kid")
            _ = try await ledger.recordPurchase(
                makeTransaction("shared2", item: .background(6), ownership: .familyShared), for: "kid")
            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("v1", .familyRevoke, for: "shared"))
                    == .applied(.revoked))
            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("v2", .familyRevoke, for: "shared2"))
                    == .applied(.revoked))
            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("v3", .familyRevoke, for: "own")) == .applied(.live))
            #expect(try await ledger.inventory(of: "kid").backgrounds == [0, 5])
            // Revoked is final: a later reversal does not bring the shared grant back.
            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("v4", .refundReversal, for: "shared2", second: 500))
                    == .applied(.revoked))
            #expect(try await ledger.inventory(of: "kid").backgrounds == [0, 5])
            #expect(
                try await balances(db.client) == ["receivable:app_store": 2_500_000, "revenue:background": -2_500_000])
        }
    }

    @Test("a sandbox refund refunds sandbox accounts only")
    func sandboxRefund() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("sb", environment: .sandbox), for: "alice")
            _ = try await ledger.recordPurchase(makeTransaction("sb"), for: "alice")
            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("e1", .refund, for: "sb", environment: .sandbox))
                    == .applied(.refunded))
            #expect(
                try await balances(db.client) == [
                    "sandbox:revenue:face": -1_200_000, "sandbox:refunds:face": 1_200_000,
                    "receivable:app_store": 1_200_000, "revenue:face": -1_200_000,
                ])
        }
    }

    @Test("bad refund events are refused and write nothing")
    func badEvents() async throws {
        try await withLedger { db, ledger in
            let noId = makeRefundEvent("", .refund, for: "x")
            var shortDigest = makeRefundEvent("e1", .refund, for: "x")
            shortDigest.evidenceSHA256 = []
            for event in [noId, shortDigest] {
                let error = try await #require(throws: LedgerError.self) { try await ledger.recordRefundEvent(event) }
                #expect(error.code == .invalidInput)
            }
            #expect(try await scalar(db.client, "SELECT count(*) FROM refund_events") == 0)
        }
    }

    @Test("an App Store notification maps to a refund event; other types to none")
    func fromNotification() {
        let transaction = makeTransaction("n1")
        func notification(_ type: VerifiedNotification.NotificationType) -> VerifiedNotification {
            VerifiedNotification(
                notificationType: type, subtype: nil, notificationUUID: "uuid-1",
                signedDate: Date(timeIntervalSince1970: 5),
                environment: .production, bundleId: "com.memolease.sesac1", appAppleId: nil,
                consumptionRequestReason: nil,
                transaction: transaction, evidenceSHA256: fakeDigest("n"))
        }
        #expect(RefundEvent(notification: notification(.refund))?.kind == .refund)
        #expect(RefundEvent(notification: notification(.refundReversed))?.kind == .refundReversal)
        #expect(RefundEvent(notification: notification(.revoke))?.kind == .familyRevoke)
        #expect(RefundEvent(notification: notification(.refundDeclined)) == nil)
        let event = RefundEvent(notification: notification(.refund))
        #expect(event?.sourceEventId == "uuid-1")
        #expect(event?.transactionId == "n1")
    }
}
