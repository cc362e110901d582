import Foundation
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Ledger

@Suite("Reconciliation")
struct ReconcilerTests {
    /// A small but complete ledger: bought, shared, unpriced, priced later, sandbox, refunded, reversed,
    /// revoked, parked, equipped.
    static func populate(_ ledger: LedgerStore) async throws {
        for uid in ["alice", "bob", "kid"] { _ = try await ledger.register(uid: uid, profile: testProfile) }
        _ = try await ledger.recordPurchase(makeTransaction("p1", item: .face(1)), for: "alice")
        _ = try await ledger.recordPurchase(makeTransaction("p2", item: .background(4)), for: "alice")
        _ = try await ledger.recordPurchase(makeTransaction("p3", item: .face(2)), for: "bob")
        _ = try await ledger.recordPurchase(makeTransaction("p4", item: .face(2), environment: .sandbox), for: "bob")
        _ = try await ledger.recordPurchase(
            makeTransaction("p5", item: .background(7), ownership: .familyShared), for: "kid")
        _ = try await ledger.recordPurchase(makeTransaction("p6", item: .face(4), unpriced: true), for: "kid")
        _ = try await ledger.recordPurchase(makeTransaction("p7", item: .face(3), currency: "USD"), for: "kid")
        _ = try await ledger.recordPurchase(makeTransaction("p8", item: .face(4), unpriced: true), for: "alice")
        _ = try await ledger.recordLearnedPrice(makeTransaction("p8", item: .face(4), evidence: "priced"))
        _ = try await ledger.recordRefundEvent(makeRefundEvent("e1", .refund, for: "p2", second: 10))
        _ = try await ledger.recordRefundEvent(makeRefundEvent("e2", .refund, for: "p3", second: 10))
        _ = try await ledger.recordRefundEvent(makeRefundEvent("e3", .refundReversal, for: "p3", second: 20))
        _ = try await ledger.recordRefundEvent(makeRefundEvent("e4", .familyRevoke, for: "p5"))
        _ = try await ledger.recordRefundEvent(makeRefundEvent("e5", .refund, for: "not-yet"))
        _ = try await ledger.equip(face: 1, background: 0, for: "alice")
        _ = try await ledger.equip(face: 2, background: 0, for: "bob")
        // A Google Play purchase, its token and Google's acknowledgement (unpriced, as Play purchases are).
        try await CatalogStore(client: ledger.client).setGoogleProductId(.background(1), "background1")
        var play = makeTransaction("gp1", item: .background(1), unpriced: true)
        play.store = .googlePlay
        play.productId = "background1"
        _ = try await ledger.recordPurchase(play, for: "alice")
        try await ledger.recordGooglePlayToken(
            GooglePlayToken(
                purchaseToken: "gp1-token", packageName: "com.memolease.sesac1", environment: .production,
                transactionId: "gp1", orderId: "gp1", productId: "background1", consumable: false,
                purchaseDate: play.purchaseDate))
        try await ledger.recordGooglePlayAcknowledgement(purchaseToken: "gp1-token", consumed: false)
    }

    @Test("a real ledger passes every check, and the report says what each examined")
    func passes() async throws {
        try await withLedger { db, ledger in
            try await Self.populate(ledger)
            let report = try await Reconciler(client: db.client).run()
            #expect(report.passed, "\(report.text)")
            #expect(report.checks.map(\.name) == LedgerInvariants.all.map(\.name))
            let examined = Dictionary(uniqueKeysWithValues: report.checks.map { ($0.name, $0.examined) })
            // 9 purchases (a Play one unpriced) + 4 state changes + a price learned later
            #expect(examined["postings_balance"] == 14)
            #expect(examined["one_purchase_entry_per_purchase"] == 9)
            #expect(examined["learned_prices_booked"] == 1)
            #expect(examined["receivable_matches_purchases"] == 3)  // production KRW, production USD, sandbox KRW
            // The ledger's 9 tables, Apple's sales reports' 2, the webhook outbox and attempts, the
            // catalog's audit trail, the backups taken, the console's record, and Google Play's tokens and
            // acknowledgements.
            #expect(examined["append_only_enforced"] == 19)
            #expect(examined["equipped_items_owned"] == 3)
            #expect(report.text.hasSuffix("reconcile: all 16 checks passed"))
            let json = try JSONSerialization.jsonObject(with: Data(try report.json().utf8)) as? [String: Any]
            #expect(json?["passed"] as? Bool == true)
            #expect((json?["checks"] as? [[String: Any]])?.count == 16)
        }
    }

    @Test("a corrupted copy of a database fails, naming the broken rows; the original still passes")
    func corruptedCopyFails() async throws {
        try await TestGate.ledger.run {
            try await withTestDatabase { db in
                try await Self.populate(LedgerStore(client: db.client))
                #expect(try await Reconciler(client: db.client).run().passed)
                await db.client.shutdown()  // CREATE DATABASE ... TEMPLATE needs the source idle

                let admin = PostgresClient(
                    configuration: .init(
                        connection: .init(url: TestCluster.replaceDatabase(in: db.url, with: "postgres")),
                        minimumConnections: 0, maximumConnections: 1))
                let copyName = db.name + "_corrupt"
                try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(copyName) TEMPLATE \(db.name)"))
                let copy = PostgresClient(
                    configuration: .init(
                        connection: .init(url: TestCluster.replaceDatabase(in: db.url, with: copyName)),
                        minimumConnections: 0, maximumConnections: 2))
                do {
                    try await Self.corrupt(copy)
                    let report = try await Reconciler(client: copy).run()
                    let failures = Dictionary(
                        uniqueKeysWithValues: report.checks.map { ($0.name, $0.failures.map(\.id)) })
                    #expect(!report.passed)
                    let entry = try await scalar(
                        copy, "SELECT entry_id FROM journal_entries WHERE transaction_id = 'p3' AND seq = 2")
                    #expect(
                        failures["postings_balance"] == ["entry \(entry) (app_store/Production/p3 refund_reversal) KRW"]
                    )
                    #expect(
                        failures["entry_postings_match_purchase"] == ["entry \(entry) (p3)", "entry \(entry) (p3)"])
                    #expect(failures["receivable_matches_purchases"] == ["receivable:app_store KRW"])
                    #expect(failures["one_purchase_entry_per_purchase"] == ["app_store/Production/p3"])
                    #expect(failures["grants_match_history"] == ["bob face 2"])
                    #expect(failures["live_grants_backed"] == ["alice face 3", "bob face 2"])
                    #expect(failures["refund_events_applied"] == ["app_store/Production/p1"])
                    #expect(failures["notifications_applied"] == ["notification lost-1"])
                    #expect(failures["equipped_items_owned"] == ["kid background 6"])
                    #expect(failures["no_orphans"] == ["users"])
                    #expect(failures["append_only_enforced"] == ["refund_events", "refund_events"])
                    #expect(report.text.contains("FAIL postings_balance"))
                    #expect(failures["support_grants_backed"] == ["bob face 2"])
                    #expect(failures["first_purchases_caught_up"] == ["nobody production"])
                    #expect(
                        failures["learned_prices_booked"] == [
                            "price app_store/Production/p1", "price app_store/Production/p1",
                        ])
                    #expect(failures["catalog_audited"]?.sorted() == ["catalog_items", "catalog_items", "face 1"])
                    #expect(failures["google_play_acknowledged"] == ["google_play/Production/gp1"])
                    #expect(report.text.hasSuffix("reconcile: 16 of 16 checks failed"))
                    let json = try JSONSerialization.jsonObject(with: Data(try report.json().utf8)) as? [String: Any]
                    #expect(json?["passed"] as? Bool == false)
                } catch {
                    Issue.record("corrupted copy: \(error)")
                }
                await copy.shutdown()
                try await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE \(copyName) WITH (FORCE)"))
                await admin.shutdown()

                // The original is untouched and still passes.
                let original = PostgresClient(
                    configuration: .init(connection: .init(url: db.url), minimumConnections: 0, maximumConnections: 1))
                #expect(try await Reconciler(client: original).run().passed)
                await original.shutdown()
            }
        }
    }

    @Test("a purchase or grant whose user is gone fails no_orphans; deleting a user is refused")
    func orphans() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("p1", item: .face(1)), for: "alice")
            let error = try await #require(throws: PostgresError.self) {
                try await db.client.query("DELETE FROM users WHERE uid = 'alice'")
            }
            #expect(error.sqlState == SQLState("SL001"))
            try await db.client.query("ALTER TABLE users DISABLE TRIGGER users_never_removed")
            try await db.client.query("DELETE FROM users WHERE uid = 'alice'")
            let report = try await Reconciler(client: db.client).run()
            let failures = report.checks.first { $0.name == "no_orphans" }?.failures.map(\.id) ?? []
            #expect(failures.contains("purchase app_store/Production/p1"))
            #expect(failures.contains("grant alice face 1"))
            // Put back so the suite's own reconcile after the test passes.
            try await db.client.query("INSERT INTO users (uid, profile) VALUES ('alice', '{}')")
            try await db.client.query("ALTER TABLE users ENABLE ALWAYS TRIGGER users_never_removed")
        }
    }

    /// Breaks the copy the ways a bug or a hand edit could, with triggers and foreign keys off. A
    /// purchase's own entry, postings and grant event are derived from its row (migration 0007) and
    /// cannot be broken apart from it; the stored later entries can.
    static func corrupt(_ client: PostgresClient) async throws {
        try await client.withConnection { connection in
            // The append-only refusals are enabled ALWAYS: replica mode alone no longer skips them.
            for table in LedgerInvariants.appendOnlyTables {
                try await connection.query(
                    PostgresQuery(unsafeSQL: "ALTER TABLE \(table) DISABLE TRIGGER \(table)_append_only"))
            }
            try await connection.query("SET session_replication_role = replica")
            // A later entry lost with its postings: p3's refund (seq 1), leaving 0 and 2.
            try await connection.query(
                """
                DELETE FROM posting_rows r USING journal_entry_rows j
                WHERE j.transaction_id = r.transaction_id AND j.entry_id = r.entry_id AND j.transaction_id = 'p3' AND j.seq = 1
                """)
            try await connection.query("DELETE FROM journal_entry_rows WHERE transaction_id = 'p3' AND seq = 1")
            // A posting's amount changed: the receivable leg of p3's reversal.
            try await connection.query(
                "UPDATE posting_rows SET amount_milli = amount_milli + 1 WHERE transaction_id = 'p3' AND account = 'receivable:app_store'"
            )
            // A grant changed without history: bob's face 2 (live twice over: production and sandbox).
            try await connection.query(
                "UPDATE grants SET purchased_count = 3 WHERE uid = 'bob' AND item_kind = 'face' AND item_index = 2")
            // A grant with history but no purchase behind it: alice's face 3.
            try await connection.query(
                "INSERT INTO grants (uid, item_kind, item_index, purchased_count) VALUES ('alice', 'face', 3, 1)")
            try await connection.query(
                """
                INSERT INTO grant_event_rows (uid, item_kind, item_index, source, delta, cause, store, environment, transaction_id)
                VALUES ('alice', 'face', 3, 'purchased', 1, 'refund_reversal', 'app_store', 'Production', 'ghost')
                """)
            // A learned price for p1, which was recorded with a price, naming an entry that does not exist.
            try await connection.query(
                """
                INSERT INTO purchase_prices (transaction_id, store, environment, price_milli, currency, signed_at,
                    evidence_sha256, entry_id)
                VALUES ('p1', 'app_store', 'Production', 1, 'KRW', now(), decode(repeat('ab', 32), 'hex'), 999999)
                """)
            // A first purchase with no purchase behind it (first_purchases, migration 0011).
            try await connection.query("INSERT INTO first_purchases VALUES ('nobody', 'production', now())")
            // A refund event that was never applied: p1.
            try await connection.query(
                """
                INSERT INTO refund_events (source_event_id, kind, store, environment, transaction_id, signed_at, evidence_sha256)
                VALUES ('sneaky', 'refund', 'app_store', 'Production', 'p1', now(), decode(repeat('ab', 32), 'hex'))
                """)
            // A stored refund notification that never became a refund event.
            try await connection.query(
                """
                INSERT INTO store_notifications (notification_uuid, store, environment, notification_type, signed_at,
                    transaction_id, refund_kind, evidence_sha256, signed_payload)
                VALUES ('lost-1', 'app_store', 'Production', 'REFUND', now(), 'p2', 'refund', decode(repeat('cd', 32), 'hex'), 'x')
                """)
            // A compensation count no support action explains.
            try await connection.query(
                "UPDATE grants SET promotional_count = 1 WHERE uid = 'bob' AND item_kind = 'face' AND item_index = 2")
            // An item equipped without being owned.
            try await connection.query("UPDATE users SET equipped_background = 6 WHERE uid = 'kid'")
            // Google's acknowledgement of the Play purchase lost (bought long before three days ago).
            try await connection.query("DELETE FROM google_play_acknowledgements WHERE purchase_token = 'gp1-token'")
            try await connection.query("RESET session_replication_role")
            // The append-only guard back on, but for refund_events.
            for table in LedgerInvariants.appendOnlyTables where table != "refund_events" {
                try await connection.query(
                    PostgresQuery(unsafeSQL: "ALTER TABLE \(table) ENABLE ALWAYS TRIGGER \(table)_append_only"))
            }
            try await connection.query("ALTER TABLE users DISABLE TRIGGER users_never_removed")
            // A catalog name changed by hand (no catalog change says so), its guard left off.
            try await connection.query("ALTER TABLE catalog_items DISABLE TRIGGER catalog_items_never_removed")
            try await connection.query(
                "UPDATE catalog_items SET name_en = 'Sturdy sprout' WHERE kind = 'face' AND item_index = 1")
        }
    }
}
