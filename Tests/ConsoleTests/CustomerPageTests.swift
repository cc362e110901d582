import Console
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Postgres
import Receipts
import TestSupport
import Testing

@Suite struct CustomerPageTests {
    /// A registered user with one App Store purchase of face 1.
    static func customer(_ db: TestDatabase, uid: String = "user-7", transactionId: String = "2000000777") async throws
    {
        let ledger = LedgerStore(client: db.client)
        _ = try await ledger.register(uid: uid, profile: try UserProfile(json: #"{"nick":"새싹"}"#))
        let date = Date(timeIntervalSince1970: 1_760_000_000)
        _ = try await ledger.recordPurchase(
            VerifiedTransaction(
                store: .appStore, environment: .production, transactionId: transactionId,
                originalTransactionId: transactionId, bundleId: "com.memolease.sesac1",
                productId: "com.memolease.sesac1.sprout1", productType: .nonConsumable, purchaseDate: date,
                originalPurchaseDate: date, signedDate: date, priceMilli: 1_200_000, currency: "KRW", storefront: "KOR",
                ownershipType: .purchased, appAccountToken: nil, evidenceSHA256: fakeDigest(transactionId)),
            for: uid)
    }

    @Test func findingByTransactionIdOpensTheCustomerWithTheirTimeline() async throws {
        try await withConsole { client, db, _ in
            try await Self.customer(db)
            try await addOperator(db, "mina", role: .support)
            var browser = Browser(client)
            try await browser.signIn("mina", "correct horse battery")
            let found = try await browser.get("/customers?q=2000000777")
            #expect(found.status == .seeOther)
            #expect(found.location == "/customers/user%2D7")
            let before = try await browser.get(found.location ?? "")
            #expect(before.status == .ok)
            #expect(before.body.contains("2000000777"))
            #expect(before.body.contains("com.memolease.sesac1.sprout1"))
            #expect(before.body.contains("<li>face 1 · ") && !before.body.contains(">refund<"))

            // Apple refunds it: the timeline shows the refund, and face 1 is no longer owned.
            _ = try await LedgerStore(client: db.client).recordRefundEvent(
                RefundEvent(
                    sourceEventId: "refund-777", kind: .refund, store: .appStore, environment: .production,
                    transactionId: "2000000777", signedDate: Date(timeIntervalSince1970: 1_760_000_100),
                    revocationReason: 0, evidenceSHA256: fakeDigest("refund-777")))
            let page = try await browser.get(found.location ?? "")
            #expect(page.body.contains(">refund<") && page.body.contains("refund-777"))
            #expect(!page.body.contains("<li>face 1 · "))
            let none = try await browser.get("/customers?q=%3Cscript%3E")
            #expect(none.status == .ok)
            #expect(none.body.contains("&lt;script&gt;") && !none.body.contains("<script>"))
        }
    }

    @Test func grantAndRevokeGoThroughAConfirmationAndTheLedger() async throws {
        try await withConsole { client, db, _ in
            try await Self.customer(db)
            try await addOperator(db, "mina", role: .support)
            var browser = Browser(client)
            try await browser.signIn("mina", "correct horse battery")
            let page = try await browser.get("/customers/user-7")
            let csrf = try #require(page.csrf)

            let confirm = try await browser.post(
                "/customers/user-7/grants", [("csrf", csrf), ("item", "background:2"), ("reason", "lost after crash")])
            #expect(confirm.status == .ok)
            #expect(confirm.body.contains("name=\"confirmed\" value=\"yes\""))
            let ledger = LedgerStore(client: db.client)
            #expect(!(try await ledger.inventory(of: "user-7")).owns(.background(2)), "nothing before confirming")

            let granted = try await browser.post(
                "/customers/user-7/grants",
                [("csrf", csrf), ("item", "background:2"), ("reason", "lost after crash"), ("confirmed", "yes")])
            #expect(granted.status == .seeOther)
            #expect(try await ledger.inventory(of: "user-7").owns(.background(2)))
            let actions = try await ledger.supportActions(of: "user-7")
            #expect(actions.map(\.actor) == ["mina"])
            let grantId = try #require(actions.first?.actionId)

            let after = try await browser.get("/customers/user-7?done=grant")
            #expect(after.body.contains("Granted."))
            #expect(after.body.contains("lost after crash"))
            #expect(after.body.contains("/grants/\(grantId)/revoke"))

            let revoked = try await browser.post(
                "/customers/user-7/grants/\(grantId)/revoke",
                [("csrf", csrf), ("reason", "found it again"), ("confirmed", "yes")])
            #expect(revoked.status == .seeOther)
            #expect(!(try await ledger.inventory(of: "user-7")).owns(.background(2)))
            let audit = try await db.client.query(
                "SELECT action, operator, target FROM console_events WHERE action LIKE 'support_%' ORDER BY event_id"
            ).map { try $0.decode((String, String, String).self) }
            #expect(audit.map(\.0) == ["support_grant", "support_revoke"])
            #expect(audit.allSatisfy { $0.1 == "mina" && $0.2 == "user-7" })
        }
    }

    @Test func aGrantPostedWithoutItsCSRFTokenChangesNothing() async throws {
        try await withConsole { client, db, _ in
            try await Self.customer(db)
            try await addOperator(db, "mina", role: .support)
            var browser = Browser(client)
            try await browser.signIn("mina", "correct horse battery")
            for fields in [
                [("item", "background:2"), ("reason", "r"), ("confirmed", "yes")],
                [("csrf", "not-the-token"), ("item", "background:2"), ("reason", "r"), ("confirmed", "yes")],
            ] {
                let refused = try await browser.post("/customers/user-7/grants", fields)
                #expect(refused.status == .forbidden)
            }
            #expect(try await LedgerStore(client: db.client).supportActions(of: "user-7").isEmpty)
        }
    }

    @Test func aGrantWithoutAReasonIsRefusedWithNothingWritten() async throws {
        try await withConsole { client, db, _ in
            try await Self.customer(db)
            try await addOperator(db, "mina", role: .support)
            var browser = Browser(client)
            try await browser.signIn("mina", "correct horse battery")
            let csrf = try #require(try await browser.get("/customers/user-7").csrf)
            let refused = try await browser.post(
                "/customers/user-7/grants",
                [("csrf", csrf), ("item", "background:2"), ("reason", " "), ("confirmed", "yes")])
            #expect(refused.status == .unprocessableContent)
            #expect(refused.body.contains("a reason is required"))
            #expect(try await LedgerStore(client: db.client).supportActions(of: "user-7").isEmpty)
        }
    }

    @Test func apppleHistoryWithoutTheAPIConfiguredSaysSo() async throws {
        try await withConsole { client, db, _ in
            try await Self.customer(db)
            try await addOperator(db, "mina", role: .support)
            var browser = Browser(client)
            try await browser.signIn("mina", "correct horse battery")
            let page = try await browser.get("/customers/user-7")
            #expect(!page.body.contains("apple-history"), "no button when nothing can answer it")
            let answer = try await browser.post("/customers/user-7/apple-history", [("csrf", page.csrf ?? "")])
            #expect(answer.status == .notImplemented)
        }
    }
}

@Suite struct CustomerPageRefusalTests {
    @Test func aGrantOfAnotherCustomerIsNotRevokedFromThisOnesPage() async throws {
        try await withConsole { client, db, _ in
            try await CustomerPageTests.customer(db)
            try await CustomerPageTests.customer(db, uid: "user-8", transactionId: "2000000888")
            let ledger = LedgerStore(client: db.client)
            let grant = try await ledger.grantCompensation(
                .background(2), to: "user-8", SupportRequest(actor: "cli", reason: "compensation"))
            try await addOperator(db, "mina", role: .support)
            var browser = Browser(client)
            try await browser.signIn("mina", "correct horse battery")
            let csrf = try #require(try await browser.get("/customers/user-7").csrf)
            let refused = try await browser.post(
                "/customers/user-7/grants/\(grant.actionId)/revoke",
                [("csrf", csrf), ("reason", "x"), ("confirmed", "yes")])
            #expect(refused.status == .notFound)
            #expect(try await ledger.inventory(of: "user-8").owns(.background(2)))
            #expect(try await ledger.supportActions(of: "user-8").count == 1)
        }
    }
}
