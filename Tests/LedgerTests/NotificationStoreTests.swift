import Foundation
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Ledger

@Suite("Stored notifications and account summaries")
struct NotificationStoreTests {
    static func notification(
        _ uuid: String, _ type: VerifiedNotification.NotificationType, for transaction: VerifiedTransaction?,
        second: Int = 100
    ) -> VerifiedNotification {
        VerifiedNotification(
            notificationType: type, subtype: nil, notificationUUID: uuid,
            signedDate: Date(timeIntervalSince1970: 1_760_000_000 + Double(second)),
            environment: transaction?.environment ?? .production, bundleId: "com.memolease.sesac1", appAppleId: 1,
            consumptionRequestReason: nil, transaction: transaction, evidenceSHA256: fakeDigest("notification/\(uuid)"))
    }

    @Test("a REFUND notification is stored once, applied as its refund event, and applying again changes nothing")
    func storeAndApply() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            let purchase = makeTransaction("n1", item: .face(2))
            _ = try await ledger.recordPurchase(purchase, for: "alice")
            let refund = Self.notification("uuid-1", .refund, for: purchase)
            #expect(try await ledger.storeNotification(refund, signedPayload: "payload-1") == .stored)
            #expect(try await ledger.unappliedNotifications() == ["uuid-1"])
            #expect(try await ledger.applyNotification("uuid-1") == .applied(.refunded))
            #expect(try await ledger.unappliedNotifications().isEmpty)
            #expect(try await ledger.inventory(of: "alice").faces == [0])

            // Apple's retry: the same notification again is a duplicate, and applying it is idempotent.
            let before = try await ledgerRowCounts(db.client)
            #expect(try await ledger.storeNotification(refund, signedPayload: "payload-1") == .duplicate)
            #expect(try await ledger.applyNotification("uuid-1") == .duplicate(.refunded))
            #expect(try await ledgerRowCounts(db.client) == before)
            let stored = try await db.client.query(
                "SELECT notification_type, transaction_id, refund_kind, signed_payload FROM store_notifications"
            ).single().decode((String, String, String, String).self)
            #expect(stored == ("REFUND", "n1", "refund", "payload-1"))
        }
    }

    @Test("notifications that ask nothing of the ledger are stored and apply to nothing")
    func nothingToApply() async throws {
        try await withLedger { db, ledger async throws in
            let test = Self.notification("uuid-test", .test, for: nil)
            #expect(try await ledger.storeNotification(test, signedPayload: "t") == .stored)
            let declined = Self.notification("uuid-declined", .refundDeclined, for: makeTransaction("n2"))
            #expect(try await ledger.storeNotification(declined, signedPayload: "d") == .stored)
            #expect(try await ledger.applyNotification("uuid-test") == nil)
            #expect(try await ledger.applyNotification("uuid-declined") == nil)
            #expect(try await ledger.unappliedNotifications().isEmpty)
            #expect(try await scalar(db.client, "SELECT count(*) FROM refund_events") == 0)
        }
    }

    @Test("a notification stored but not applied is listed until applied; one for an unknown purchase is parked")
    func sweep() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            let bought = makeTransaction("n3", item: .background(4))
            _ = try await ledger.recordPurchase(bought, for: "alice")
            _ = try await ledger.storeNotification(
                Self.notification("a", .refund, for: bought, second: 10), signedPayload: "a")
            _ = try await ledger.storeNotification(
                Self.notification("b", .refund, for: makeTransaction("n-unknown"), second: 20), signedPayload: "b")
            #expect(try await ledger.unappliedNotifications() == ["a", "b"])
            #expect(try await ledger.unappliedNotifications(limit: 1) == ["a"])
            for uuid in try await ledger.unappliedNotifications() { _ = try await ledger.applyNotification(uuid) }
            #expect(try await ledger.unappliedNotifications().isEmpty)
            #expect(try await ledger.purchaseHistory(of: "alice").first?.state == .refunded)
            #expect(try await scalar(db.client, "SELECT count(*) FROM refund_events WHERE source_event_id = 'b'") == 1)
        }
    }

    @Test("bad notification input is refused with nothing written")
    func badInput() async throws {
        try await withLedger { db, ledger in
            let before = try await ledgerRowCounts(db.client)
            var long = Self.notification(String(repeating: "x", count: 129), .test, for: nil)
            await #expect(throws: LedgerError.self) { try await ledger.storeNotification(long, signedPayload: "p") }
            long = Self.notification("ok", .test, for: nil)
            long.evidenceSHA256 = [1]
            await #expect(throws: LedgerError.self) { try await ledger.storeNotification(long, signedPayload: "p") }
            await #expect(throws: LedgerError.self) {
                try await ledger.storeNotification(Self.notification("ok", .test, for: nil), signedPayload: "nul\0")
            }
            await #expect(throws: LedgerError.self) { try await ledger.applyNotification("never-stored") }
            #expect(try await ledgerRowCounts(db.client) == before)
        }
    }

    @Test("the account summary has the user, owned items and transaction ids; nil when not registered")
    func accountSummary() async throws {
        try await withLedger { _, ledger in
            #expect(try await ledger.accountSummary(of: "nobody") == nil)
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("s2", item: .background(7)), for: "alice")
            _ = try await ledger.recordPurchase(makeTransaction("s1", item: .face(4)), for: "alice")
            _ = try await ledger.equip(face: 4, background: 7, for: "alice")
            let summary = try #require(try await ledger.accountSummary(of: "alice"))
            #expect(summary.inventory == (try await ledger.inventory(of: "alice")))
            #expect(summary.inventory.faces == [0, 4] && summary.inventory.backgrounds == [0, 7])
            #expect(summary.user == (try await ledger.user("alice")))
            #expect(summary.user.equipped == EquippedItems(face: 4, background: 7))
            #expect(summary.transactionIds == (try await ledger.transactionIds(of: "alice")))
            #expect(Set(summary.transactionIds) == ["s1", "s2"])
        }
    }
}
