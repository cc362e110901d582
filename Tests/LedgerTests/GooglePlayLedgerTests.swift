import Foundation
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Ledger

/// Google Play in the ledger (migration 0021): the catalog's second product id, Play purchases in the
/// same tables and books as the App Store's. The HTTP and Google sides are in GooglePlayTests.
@Suite("Google Play in the ledger")
struct GooglePlayLedgerTests {
    static func play(
        _ id: String, productId: String, environment: StoreEnvironment = .production, price: Int64? = nil
    )
        -> VerifiedTransaction
    {
        var transaction = makeTransaction(id, item: .face(2), environment: environment, price: price)
        transaction.store = .googlePlay
        transaction.productId = productId
        if price == nil {
            transaction.priceMilli = nil
            transaction.currency = nil
        }
        return transaction
    }

    /// Keeps the token of a recorded Play purchase and Google's acknowledgement, as the desk does (the
    /// `google_play_acknowledged` invariant asks for both).
    static func acknowledged(_ transaction: VerifiedTransaction, _ ledger: LedgerStore) async throws {
        let token = "token-" + transaction.transactionId
        try await ledger.recordGooglePlayToken(
            GooglePlayToken(
                purchaseToken: token, packageName: "com.memolease.sesac1", environment: transaction.environment,
                transactionId: transaction.transactionId, orderId: transaction.transactionId,
                productId: transaction.productId, consumable: false, purchaseDate: transaction.purchaseDate))
        try await ledger.recordGooglePlayAcknowledgement(purchaseToken: token, consumed: false)
    }

    @Test(
        "an item's Play product id is set once, with who and why in the catalog's trail: never changed, never another item's"
    )
    func productIdSetOnce() async throws {
        try await withLedger { db, _ in
            let catalog = CatalogStore(client: db.client)
            let ops = SupportRequest(actor: "ops-kim", reason: "sold on Google Play from December")
            let change = try await catalog.setGoogleProductId(.face(2), "sprout2", ops)
            #expect(change.kind == .googleProduct && change.item.googleProductId == "sprout2")
            #expect(change.actor == "ops-kim" && change.nameBefore == change.item.name)
            for (item, id) in [
                (ItemID.face(2), "sprout2"), (.face(2), "other"), (.face(3), "sprout2"), (.face(0), "free"),
                (.face(3), "Not Valid"),
            ] {
                await #expect(throws: LedgerError.self, "\(item) \(id)") {
                    try await catalog.setGoogleProductId(item, id, ops)
                }
            }
            await #expect(throws: LedgerError.self) {
                try await catalog.setGoogleProductId(.face(3), "sprout3", SupportRequest(actor: "ops", reason: " "))
            }
            #expect(try await catalog.googleProductIds() == [.face(2): "sprout2"])
            let trail = try await db.client.query(
                "SELECT change, google_product_id, actor, reason FROM catalog_changes WHERE change = 'google_product'"
            ).map { try $0.decode((String, String, String, String).self) }
            #expect(trail.count == 1 && trail[0].1 == "sprout2" && trail[0].3 == ops.reason, "\(trail)")
            let reconciled = try await Reconciler(client: db.client).run()
            #expect(reconciled.passed, "\(reconciled.text)")
            // The trigger refuses a change made behind the store's back.
            let error = try await #require(throws: PostgresError.self) {
                try await db.client.query(
                    "UPDATE catalog_items SET google_product_id = 'x' WHERE kind = 'face' AND item_index = 2")
            }
            #expect(error.sqlState == SQLState("SL001"))
        }
    }

    @Test("a Play product id set behind the store's back, without its catalog change, fails catalog_audited")
    func productIdWithoutChange() async throws {
        try await TestGate.ledger.run { try await Self.withoutInvariants() }
    }

    private static func withoutInvariants() async throws {
        try await withTestDatabase { db in
            // The trigger lets the id go from NULL once; only the store writes the change that goes with it.
            try await db.client.query(
                "UPDATE catalog_items SET google_product_id = 'sprout3' WHERE kind = 'face' AND item_index = 3")
            try await CatalogStore(client: db.client).setGoogleProductId(.face(2), "sprout2", playOps)
            let check = try #require(
                try await Reconciler(client: db.client).run().checks.first { $0.name == "catalog_audited" })
            #expect(!check.passed && check.failures.map(\.id) == ["face 3"], "\(check.failures)")
        }
    }

    @Test("a Play purchase names its item by the Play product id, and books production money to receivable:google_play")
    func purchaseByPlayProductId() async throws {
        try await withLedger { db, ledger in
            try await CatalogStore(client: db.client).setGoogleProductId(.face(2), "sprout2", playOps)
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            // Apple's product id is not a Play product id.
            await #expect(throws: LedgerError.self) {
                try await ledger.recordPurchase(
                    Self.play("GPA.0", productId: "com.memolease.sesac1.sprout2"), for: "alice")
            }
            let priced = try await ledger.recordPurchase(
                Self.play("GPA.1", productId: "sprout2", price: 2_500_000), for: "alice")
            try await Self.acknowledged(Self.play("GPA.1", productId: "sprout2"), ledger)
            guard case .recorded(let purchase) = priced else {
                Issue.record("not recorded: \(priced)")
                return
            }
            #expect(purchase.item == .face(2) && purchase.book == "production")
            let accounts = try await db.client.query(
                "SELECT account::text FROM postings WHERE transaction_id = 'GPA.1' ORDER BY leg"
            ).map { try $0.decode(String.self, at: 0) }
            #expect(accounts == ["receivable:google_play", "revenue:face"])
            let test = try await ledger.recordPurchase(
                Self.play("GPA.2", productId: "sprout2", environment: .sandbox), for: "alice")
            try await Self.acknowledged(Self.play("GPA.2", productId: "sprout2", environment: .sandbox), ledger)
            #expect(test.purchase?.book == "sandbox")
            #expect(try await Reconciler(client: db.client, checks: LedgerInvariants.all).run().passed)
            // The schema keeps the rule too (migration 0021's CHECK): a Play test purchase never reaches the
            // production book, whatever writes the row.
            let error = try await #require(throws: PostgresError.self) {
                try await db.client.query(
                    """
                    INSERT INTO purchases (store, environment, transaction_id, original_transaction_id, uid, product_id,
                        item_kind, item_index, book, purchased_at, ownership, signed_at, evidence_sha256)
                    VALUES ('google_play', 'Sandbox', 'GPA.X', 'GPA.X', 'alice', 'sprout2', 'face', 2, 'production',
                        now(), 'PURCHASED', now(), decode(repeat('ab', 32), 'hex'))
                    """)
            }
            #expect(error.sqlState == .checkViolation, "\(error)")
        }
    }

    @Test("reconcile names a Play purchase without its token, and one never acknowledged nor refunded")
    func reconcileFindsUnacknowledged() async throws {
        try await withLedger { db, ledger in
            try await CatalogStore(client: db.client).setGoogleProductId(.face(2), "sprout2", playOps)
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            let check = GooglePlayInvariants.acknowledged
            let play = Self.play("GPA.1", productId: "sprout2")
            _ = try await ledger.recordPurchase(play, for: "alice")
            var report = try await Reconciler(client: db.client, checks: [check]).run()
            #expect(report.checks.first?.failures.map(\.detail) == ["no purchase token recorded"])
            try await ledger.recordGooglePlayToken(
                GooglePlayToken(
                    purchaseToken: "tok", packageName: "com.memolease.sesac1", environment: .production,
                    transactionId: "GPA.1", orderId: "GPA.1", productId: "sprout2", consumable: false,
                    purchaseDate: play.purchaseDate))
            report = try await Reconciler(client: db.client, checks: [check]).run()
            #expect(report.checks.first?.failures.first?.detail.hasPrefix("not acknowledged within three days") == true)
            // Google refunded it (the voided read): the ledger agrees with Google again.
            _ = try await ledger.recordGooglePlayVoid(
                GooglePlayVoid(purchaseToken: "tok", orderId: "GPA.1", voidedDate: Date()))
            #expect(try await Reconciler(client: db.client, checks: [check]).run().passed)
        }
    }

    @Test("a void is one refund event however often it is read, and waits for a purchase not recorded yet")
    func voidIdempotent() async throws {
        try await withLedger { db, ledger in
            try await CatalogStore(client: db.client).setGoogleProductId(.face(2), "sprout2", playOps)
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            let void = GooglePlayVoid(purchaseToken: "tok", orderId: "GPA.1", voidedDate: Date())
            #expect(try await ledger.recordGooglePlayVoid(void) == .parked)
            #expect(try await ledger.recordGooglePlayVoid(void) == .duplicate(nil))
            let recorded = try await ledger.recordPurchase(Self.play("GPA.1", productId: "sprout2"), for: "alice")
            try await Self.acknowledged(Self.play("GPA.1", productId: "sprout2"), ledger)
            #expect(recorded.purchase?.state == .refunded)
            #expect(try await ledger.recordGooglePlayVoid(void) == .duplicate(.refunded))
        }
    }
}
