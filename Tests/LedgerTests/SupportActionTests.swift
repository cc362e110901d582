import Foundation
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Ledger

@Suite("Support actions: compensation grants and revokes")
struct SupportActionTests {
    static let request = SupportRequest(actor: "support-kim", reason: "item missing after a store outage")

    @Test("a grant makes the item owned, moves no money, and is listed with who, when and why")
    func grant() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            let action = try await ledger.grantCompensation(.face(3), to: "alice", Self.request)
            #expect(action.kind == .grant && action.actor == "support-kim" && action.uid == "alice")
            #expect(try await ledger.inventory(of: "alice").faces == [0, 3])
            #expect(try await balances(db.client).isEmpty)
            #expect(try await scalar(db.client, "SELECT count(*) FROM journal_entries") == 0)
            let listed = try await ledger.supportActions(of: "alice")
            #expect(listed.map(\.actionId) == [action.actionId])
            #expect(listed.first?.reason == "item missing after a store outage" && listed.first?.revokedBy == nil)
            #expect(
                try await scalar(
                    db.client,
                    "SELECT count(*) FROM grant_events WHERE source = 'promotional' AND cause = 'support_grant'") == 1)
        }
    }

    @Test("a revoke takes the item back and unequips it, unless a purchase still backs it")
    func revoke() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "bob", profile: testProfile)
            let grant = try await ledger.grantCompensation(.background(2), to: "bob", Self.request)
            _ = try await ledger.equip(face: 0, background: 2, for: "bob")
            let revoke = try await ledger.revokeCompensation(
                grant.actionId, SupportRequest(actor: "support-lee", reason: "granted to the wrong user"))
            #expect(revoke.kind == .revoke && revoke.revokes == grant.actionId && revoke.item == .background(2))
            #expect(try await ledger.inventory(of: "bob").backgrounds == [0])
            #expect(try await ledger.user("bob")?.equipped.background == 0)
            #expect(try await ledger.supportActions(of: "bob").first?.revokedBy == revoke.actionId)

            // Bought and compensated: revoking the compensation leaves the bought item owned.
            _ = try await ledger.recordPurchase(makeTransaction("b1", item: .face(2)), for: "bob")
            let second = try await ledger.grantCompensation(.face(2), to: "bob", Self.request)
            _ = try await ledger.revokeCompensation(second.actionId, Self.request)
            #expect(try await ledger.inventory(of: "bob").faces == [0, 2])
        }
    }

    @Test("bad requests get a clear error and write nothing")
    func refusals() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "carol", profile: testProfile)
            let grant = try await ledger.grantCompensation(.face(1), to: "carol", Self.request)
            _ = try await ledger.revokeCompensation(grant.actionId, Self.request)
            let before = try await scalar(db.client, "SELECT count(*) FROM support_actions")
            let cases: [(LedgerError.Code, () async throws -> Void)] = [
                (
                    .invalidInput,
                    { _ = try await ledger.grantCompensation(.face(1), to: "carol", .init(actor: "a", reason: " \n")) }
                ),
                (
                    .invalidInput,
                    { _ = try await ledger.grantCompensation(.face(1), to: "carol", .init(actor: "", reason: "r")) }
                ),
                // PostgreSQL's text cannot hold U+0000: it must be refused here, not fail in the database.
                (
                    .invalidInput,
                    {
                        _ = try await ledger.grantCompensation(
                            .face(1), to: "carol", .init(actor: "a", reason: "r\u{0}"))
                    }
                ),
                (
                    .invalidInput,
                    { _ = try await ledger.revokeCompensation(grant.actionId, .init(actor: "a", reason: "\u{1B}[2J")) }
                ),
                (.userNotRegistered, { _ = try await ledger.grantCompensation(.face(1), to: "nobody", Self.request) }),
                (.noSuchItem, { _ = try await ledger.grantCompensation(.face(99), to: "carol", Self.request) }),
                (.noSuchItem, { _ = try await ledger.grantCompensation(.face(0), to: "carol", Self.request) }),
                (.alreadyRevoked, { _ = try await ledger.revokeCompensation(grant.actionId, Self.request) }),
                (.noSuchGrant, { _ = try await ledger.revokeCompensation(987_654, Self.request) }),
            ]
            for (code, attempt) in cases {
                await #expect(throws: LedgerError.self) { try await attempt() }
                do { try await attempt() } catch let error as LedgerError { #expect(error.code == code) }
            }
            #expect(try await scalar(db.client, "SELECT count(*) FROM support_actions") == before)
        }
    }

    @Test("a reason is at most 500 characters and 2,000 bytes, and shows every character it holds")
    func reasonRules() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "rita", profile: testProfile)
            let accepted = [
                String(repeating: "보", count: 500),  // 1,500 bytes
                String(repeating: "😀", count: 500),  // 2,000 bytes
                "가족 👨‍👩‍👧 ❤️ 선물\n두 번째 줄\t탭",
            ]
            for reason in accepted {
                _ = try await ledger.grantCompensation(.face(1), to: "rita", .init(actor: "a", reason: reason))
            }
            let before = try await scalar(db.client, "SELECT count(*) FROM support_actions")
            let refused = [
                String(repeating: "a", count: 501),
                // One character, 3,001 code points: counted as one by String.count.
                "e" + String(repeating: "\u{301}", count: 3000),
                "refund \u{202E}gnp.exe", "zero\u{200B}width", "\u{3164}", "bom\u{FEFF}", "isolate\u{2066}x\u{2069}",
            ]
            for reason in refused {
                do {
                    _ = try await ledger.grantCompensation(.face(1), to: "rita", .init(actor: "a", reason: reason))
                    Issue.record(
                        "accepted \(reason.unicodeScalars.count) scalars: \(reason.debugDescription.prefix(40))")
                } catch let error as LedgerError {
                    #expect(error.code == .invalidInput)
                }
            }
            #expect(try await scalar(db.client, "SELECT count(*) FROM support_actions") == before)
        }
    }

    @Test("support actions are append-only")
    func appendOnly() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "dan", profile: testProfile)
            _ = try await ledger.grantCompensation(.face(1), to: "dan", Self.request)
            for statement: PostgresQuery in [
                "UPDATE support_actions SET reason = 'changed'", "DELETE FROM support_actions",
                "TRUNCATE support_actions CASCADE",
            ] {
                await #expect(throws: PostgresError.self) { try await db.client.query(statement) }
            }
            #expect(try await ledger.supportActions(of: "dan").first?.reason == Self.request.reason)
        }
    }

    @Test("a look-up by transaction id or original transaction id shows the purchase's whole history")
    func lookUp() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "erin", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("t-1", item: .face(4)), for: "erin")
            _ = try await ledger.recordRefundEvent(makeRefundEvent("n-1", .refund, for: "t-1", second: 10))
            _ = try await ledger.recordRefundEvent(makeRefundEvent("n-2", .refundReversal, for: "t-1", second: 20))
            _ = try await ledger.grantCompensation(
                .face(1), to: "erin", SupportRequest(actor: "support-kim", reason: "sorry", transactionId: "t-1"))
            let records = try await ledger.lookUpPurchases("t-1")
            let record = try #require(records.first)
            #expect(records.count == 1 && record.purchase.state == .live)
            #expect(record.entries.map(\.kind) == [.purchase, .refund, .refundReversal])
            #expect(record.storeEvents.map(\.sourceEventId) == ["n-1", "n-2"])
            #expect(record.grantChanges.map(\.delta) == [1, -1, 1])
            #expect(record.supportActions.map(\.reason) == ["sorry"])
            #expect(try await ledger.lookUpPurchases("no-such").isEmpty)
            #expect(try await ledger.purchaseRecords(of: "erin").map(\.purchase.transactionId) == ["t-1"])
        }
    }
}
