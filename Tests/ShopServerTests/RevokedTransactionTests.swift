import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Postgres
import Receipts
import TestSupport
import Testing

@testable import ShopServer

/// A signed transaction tells more than "it was bought": `revocationDate` says Apple refunded it, and
/// `appAccountToken` says which of the app's accounts bought it.
@Suite("Signed transactions carrying a revocation or an account token")
struct RevokedTransactionTests {
    /// A StoreKit 2 signed transaction from the test CA, with `extra` fields (revocation, token).
    static func signedTransaction(_ product: String, transaction: String, extra: [String: Any] = [:]) -> String {
        var fields: [String: Any] = [
            "transactionId": transaction, "originalTransactionId": transaction, "bundleId": ServerTest.bundleId,
            "productId": product, "type": "Non-Consumable", "purchaseDate": 1_763_000_000_000 as Int64,
            "originalPurchaseDate": 1_763_000_000_000 as Int64,
            "signedDate": Int64(Date().timeIntervalSince1970 * 1000),
            "environment": "Production", "price": 2_500_000, "currency": "KRW", "storefront": "KOR",
            "inAppOwnershipType": "PURCHASED",
        ]
        fields.merge(extra) { _, new in new }
        return ServerTest.pki.sign(fields)
    }

    static var revoked: [String: Any] { ["revocationDate": 1_763_100_000_000 as Int64, "revocationReason": 1] }

    /// Revenue minus refunds of one transaction, over every book: zero when its refund is recorded.
    static func netRevenue(_ client: PostgresClient, transaction: String) async throws -> Int {
        try await client.query(
            """
            SELECT coalesce(sum(p.amount_milli), 0)::int8 FROM postings p
            WHERE p.transaction_id = \(transaction) AND (p.account LIKE '%revenue:%' OR p.account LIKE '%refunds:%')
            """
        ).single().decode(Int.self, at: 0)
    }

    static func entryKinds(_ client: PostgresClient, transaction: String) async throws -> [String] {
        try await client.query("SELECT kind FROM journal_entries WHERE transaction_id = \(transaction) ORDER BY seq")
            .map { try $0.decode(String.self, at: 0) }
    }

    @Test(
        "POST /api/v1/purchases with a revoked transaction: recorded with its refund, not owned, revenue nets to zero")
    func revokedOnJSONSurface() async throws {
        try await withShopServer { client, db in
            _ = try await client.api(.post, "/api/v1/me", uid: "r1")
            let jws = Self.signedTransaction(product(.face(3)), transaction: "2000000700000001", extra: Self.revoked)
            let answer = try await client.api(.post, "/api/v1/purchases", uid: "r1", json: ["signedTransaction": jws])
            #expect(answer.status == .ok, "\(answer.body)")
            #expect((answer.json["purchase"] as? [String: Any])?["state"] as? String == "refunded", "\(answer.body)")
            let owned = try await client.api(.get, "/api/v1/me", uid: "r1").json["owned"] as? [String: [Int]]
            #expect(owned?["faces"] == [0], "a refunded item is not owned: \(String(describing: owned))")
            #expect(try await Self.entryKinds(db.client, transaction: "2000000700000001") == ["purchase", "refund"])
            #expect(try await Self.netRevenue(db.client, transaction: "2000000700000001") == 0)

            let again = try await client.api(.post, "/api/v1/purchases", uid: "r1", json: ["signedTransaction": jws])
            #expect(again.status == .ok && again.json["duplicate"] as? Bool == true, "\(again.body)")
            #expect(try await Self.entryKinds(db.client, transaction: "2000000700000001") == ["purchase", "refund"])
            let report = try await Reconciler(client: db.client).run()
            #expect(report.passed, "\(report.text)")
        }
    }

    @Test("POST /v1/user/shop/ios with a revoked transaction: recorded with its refund, myinfo does not list the item")
    func revokedOnSeSACSurface() async throws {
        try await withShopServer { client, db in
            try await client.signUp("r2")
            let jws = Self.signedTransaction(
                product(.background(4)), transaction: "2000000700000002", extra: Self.revoked)
            let answer = try await client.sesac(
                .post, "/v1/user/shop/ios", uid: "r2", form: [("receipt", jws), ("product", product(.background(4)))])
            #expect(answer.status == .ok, "\(answer.body)")
            let info = try await client.sesac(.get, "/v1/user/shop/myinfo", uid: "r2").decode(ClientUserDocument.self)
            #expect(info.backgroundCollection == [0], "a refunded background is not owned")
            #expect(try await Self.entryKinds(db.client, transaction: "2000000700000002") == ["purchase", "refund"])
            #expect(try await Self.netRevenue(db.client, transaction: "2000000700000002") == 0)
            let report = try await Reconciler(client: db.client).run()
            #expect(report.passed, "\(report.text)")
        }
    }

    @Test("an appAccountToken other than the user's known one is refused as account_token_mismatch; nothing is written")
    func accountTokenMismatch() async throws {
        try await withShopServer { client, db in
            _ = try await client.api(.post, "/api/v1/me", uid: "t1")
            _ = try await client.api(.post, "/api/v1/me", uid: "t2")
            let known = "6f1c1b0e-5b8a-4f3e-9a57-0c2d6a1e9b11"
            let other = "0a0b0c0d-1111-2222-3333-444455556666"
            func buy(_ uid: String, _ transaction: String, token: String?) async throws -> Answer {
                let jws = Self.signedTransaction(
                    product(.face(1)), transaction: transaction, extra: token.map { ["appAccountToken": $0] } ?? [:])
                return try await client.api(.post, "/api/v1/purchases", uid: uid, json: ["signedTransaction": jws])
            }
            #expect(try await buy("t1", "2000000700000010", token: known).status == .ok)
            let before = try await ledgerRowCounts(db.client)
            let mismatch = try await buy("t1", "2000000700000011", token: other)
            #expect(
                mismatch.status == .unprocessableContent && mismatch.errorCode == "account_token_mismatch",
                "\(mismatch.body)")
            #expect(try await ledgerRowCounts(db.client) == before, "nothing written")
            let sesac = try await client.sesac(
                .post, "/v1/user/shop/ios", uid: "t1",
                form: [
                    (
                        "receipt",
                        Self.signedTransaction(
                            product(.face(2)), transaction: "2000000700000012", extra: ["appAccountToken": other])
                    ),
                    ("product", product(.face(2))),
                ])
            #expect(sesac.status.code != 200, "refused on the SeSAC surface too: \(sesac.status)")
            #expect(try await buy("t1", "2000000700000013", token: known).status == .ok, "the known token is accepted")
            #expect(try await buy("t1", "2000000700000014", token: nil).status == .ok, "no token: nothing to compare")
            #expect(try await buy("t2", "2000000700000015", token: other).status == .ok, "a user with no known token")
        }
    }
}
