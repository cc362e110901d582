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
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("t1"), for: "alice")
            _ = try await ledger.recordRefundEvent(makeRefundEvent("e1", .refund, for: "t1"))
            let notification = VerifiedNotification(
                notificationType: .refund, subtype: nil, notificationUUID: "n1", signedDate: Date(),
                environment: .production,
                bundleId: "com.memolease.sesac1", appAppleId: nil, consumptionRequestReason: nil,
                transaction: makeTransaction("t1"), evidenceSHA256: fakeDigest("n1"))
            _ = try await ledger.storeNotification(notification, signedPayload: "payload")
            _ = try await ledger.applyNotification("n1")
            let rowsBefore = try await scalar(db.client, PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table)"))
            #expect(rowsBefore > 0)
            let column = table == "posting_rows" ? "currency" : "transaction_id"
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
}
