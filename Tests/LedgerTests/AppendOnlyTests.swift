import Foundation
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Ledger

@Suite("Append-only ledger tables")
struct AppendOnlyTests {
    @Test(
        "UPDATE, DELETE and TRUNCATE of every append-only table are refused by the database",
        arguments: LedgerInvariants.appendOnlyTables)
    func refused(table: String) async throws {
        try await withLedger(table) { db, ledger in
            try await Self.fillEveryTable(ledger)
            let rowsBefore = try await scalar(db.client, PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table)"))
            #expect(rowsBefore > 0)
            let column = Self.columnToUpdate[table, default: "transaction_id"]
            for statement in [
                "UPDATE \(table) SET \(column) = \(column)",
                "DELETE FROM \(table)",
                "TRUNCATE \(table) CASCADE",
            ] {
                let error = try await #require(throws: PostgresError.self, "\(statement)") {
                    try await db.client.query(PostgresQuery(unsafeSQL: statement))
                }
                #expect(error.sqlState == SQLState("SL001"), "\(statement): \(error)")
                #expect(error.message.contains("append-only"))
            }
            #expect(
                try await scalar(db.client, PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table)")) == rowsBefore)
        }
    }

    @Test(
        "session_replication_role = replica does not switch the refusals off",
        arguments: LedgerInvariants.appendOnlyTables)
    func replicaRoleStillRefused(table: String) async throws {
        try await withLedger(table) { db, ledger in
            try await Self.fillEveryTable(ledger)
            let column = Self.columnToUpdate[table, default: "transaction_id"]
            let error = try await #require(throws: PostgresError.self) {
                try await db.client.withTransaction { connection in
                    try await connection.query("SET LOCAL session_replication_role = replica")
                    try await connection.query(PostgresQuery(unsafeSQL: "DELETE FROM \(table)"))
                    try await connection.query(PostgresQuery(unsafeSQL: "UPDATE \(table) SET \(column) = \(column)"))
                }
            }
            #expect(error.sqlState == SQLState("SL001"), "\(error)")
        }
    }

    @Test("append_only_enforced fails when a refusing trigger is set ENABLE REPLICA (or plain ENABLE)")
    func replicaTriggerFailsTheCheck() async throws {
        try await withLedger { db, _ in
            let check = try #require(LedgerInvariants.all.first { $0.name == "append_only_enforced" })
            let reconciler = Reconciler(client: db.client, checks: [check])
            #expect(try await reconciler.run().passed, "the shipped schema passes")
            try await db.client.query("ALTER TABLE purchases ENABLE REPLICA TRIGGER purchases_append_only")
            let replica = try await reconciler.run()
            #expect(!replica.passed && replica.text.contains("purchases"), "\(replica.text)")
            try await db.client.query("ALTER TABLE purchases ENABLE TRIGGER purchases_append_only")
            #expect(
                !(try await reconciler.run().passed), "ENABLE (origin only) is bypassed by session_replication_role")
            try await db.client.query("ALTER TABLE purchases ENABLE ALWAYS TRIGGER purchases_append_only")
        }
    }

    /// A column each table has, for the refused UPDATE (most have `transaction_id`).
    static let columnToUpdate = [
        "posting_rows": "currency", "apple_sales_reports": "file_name", "apple_sales_report_rows": "sku",
        "webhook_outbox": "uid", "webhook_attempts": "outcome", "catalog_changes": "reason",
        "backups": "label", "console_events": "detail", "google_play_acknowledgements": "purchase_token",
        "google_play_pending_claims": "product_id",
    ]

    /// A purchase, its refund, a stored, applied notification, a price learned later, a catalog change,
    /// an imported Apple sales report, a webhook attempt, a backup, a console sign-in and an acknowledged
    /// Google Play purchase: a row in every append-only table (the
    /// ledger's events fill the webhook outbox).
    static func fillEveryTable(_ ledger: LedgerStore) async throws {
        // Webhook events are written while an endpoint is enabled (migration 0018).
        try await addListeningEndpoint(ledger.client)
        _ = try await ledger.register(uid: "alice", profile: testProfile)
        _ = try await ledger.recordPurchase(makeTransaction("t1"), for: "alice")
        _ = try await ledger.recordPurchase(makeTransaction("t2", item: .face(2), unpriced: true), for: "alice")
        _ = try await ledger.recordLearnedPrice(makeTransaction("t2", item: .face(2), evidence: "priced"))
        _ = try await ledger.recordRefundEvent(makeRefundEvent("e1", .refund, for: "t1"))
        let notification = VerifiedNotification(
            notificationType: .refund, subtype: nil, notificationUUID: "n1", signedDate: Date(),
            environment: .production,
            bundleId: "com.memolease.sesac1", appAppleId: nil, consumptionRequestReason: nil,
            transaction: makeTransaction("t1"), evidenceSHA256: fakeDigest("n1"))
        _ = try await ledger.storeNotification(notification, signedPayload: "payload")
        _ = try await ledger.applyNotification("n1")
        _ = try await ledger.grantCompensation(
            .face(2), to: "alice", SupportRequest(actor: "support", reason: "refunded by mistake", transactionId: "t1"))
        // A catalog change (`shopledger catalog add`).
        _ = try await CatalogStore(client: ledger.client).add(
            NewCatalogItem(
                item: .face(5), productId: "com.memolease.sesac1.sprout5", name: "무지개 새싹", nameEn: "Rainbow sprout",
                price: Money(amountMilli: 3_000_000, currency: "KRW")),
            SupportRequest(actor: "ops", reason: "new item"))
        // As `shopledger apple sales import` stores one (AppleSalesTests import real files).
        try await ledger.client.query(
            """
            WITH report AS (
                INSERT INTO apple_sales_reports (report_date, format_version, header, file_name, content_sha256,
                    uncompressed_bytes, row_count)
                VALUES ('2025-03-09', '1_3', 'SKU', 'report.txt', \(Data(fakeDigest("report"))), 100, 1)
                RETURNING report_id
            )
            INSERT INTO apple_sales_report_rows (report_id, line, sku, product_type, units, customer_price_milli,
                customer_currency, country_code, developer_proceeds_milli, proceeds_currency)
            SELECT report_id, 2, 'com.memolease.sesac1.sprout2', 'IA1', 1, 2500000, 'KRW', 'KR', 1750000, 'KRW'
            FROM report
            """)
        // As the delivery worker records one (WebhooksTests deliver to a real receiver).
        try await ledger.client.query(
            """
            INSERT INTO webhook_attempts (endpoint_id, event_id, attempt, started_at, duration_ms, status_code, outcome)
            SELECT 1, min(event_id), 1, now(), 12, 204, 'delivered' FROM webhook_outbox
            """)
        // A Google Play purchase, its token and Google's acknowledgement (GooglePlayTests go through Google).
        try await CatalogStore(client: ledger.client).setGoogleProductId(.face(3), "sprout3")
        var play = makeTransaction("GPA.1", item: .face(3), unpriced: true)
        play.store = .googlePlay
        play.productId = "sprout3"
        _ = try await ledger.recordPurchase(play, for: "alice")
        try await ledger.recordGooglePlayToken(
            GooglePlayToken(
                purchaseToken: "play-token", packageName: "com.memolease.sesac1", environment: .production,
                transactionId: "GPA.1", orderId: "GPA.1", productId: "sprout3", consumable: false,
                purchaseDate: play.purchaseDate))
        try await ledger.recordGooglePlayAcknowledgement(purchaseToken: "play-token", consumed: false)
        _ = try await ledger.claimGooglePlayPending(
            purchaseToken: "pending-token", uid: "alice", packageName: "com.memolease.sesac1", productId: "sprout3")
        // As `shopledger backups record` records one (FaultTests.BackupRestoreTests, with pgBackRest).
        try await BackupLog(client: ledger.client).record(
            BackupRecord(
                stanza: "shopledger", label: "20261129-033001F", kind: .full, startedAt: Date(timeIntervalSince1970: 1),
                stoppedAt: Date(timeIntervalSince1970: 2), databaseBytes: 1, repositoryBytes: 1,
                walStart: "000000010000000000000002", walStop: "000000010000000000000002"))
        // As the console records a sign-in (ConsoleTests sign in through its pages).
        try await ledger.client.query(
            """
            INSERT INTO console_events (at, action, operator, address) VALUES (now(), 'login_attempt', 'mina', '127.0.0.1')
            """)
    }
}
