import Foundation
import HTTPTypes
import HummingbirdTesting
import Ledger
import Receipts
import ShopServer
import TestSupport
import Testing

/// What the shipped SeSAC clients do: post the classic app receipt with the product they bought.
@Suite("Classic app receipts through both surfaces")
struct ClassicReceiptStoryTests {
    static let face3 = product(.face(3))
    static let face4 = product(.face(4))
    static let background2 = product(.background(2))

    @Test("SeSAC story: each posted product records its entry once; a refunded one grants nothing; strangers get 201")
    func sesacStory() async throws {
        try await withShopServer { client, db in
            try await client.signUp("c1")
            try await client.signUp("c2")
            let receipt = ServerTest.classicReceipt(
                [(Self.face3, "c-100"), (Self.background2, "c-101"), (Self.face4, "c-102")], cancelled: ["c-102"])
            func post(_ uid: String, _ productId: String, _ receipt: String = receipt) async throws -> Answer {
                try await client.sesac(
                    .post, "/v1/user/shop/ios", uid: uid, form: [("receipt", receipt), ("product", productId)])
            }

            #expect(try await post("c1", Self.face3).status == .ok)
            var document = try await client.sesac(.get, "/v1/user/shop/myinfo", uid: "c1").decode(
                ClientUserDocument.self)
            #expect(document.sesacCollection == [0, 3])
            #expect(document.transactionId == ["c-100"], "only the posted product's entry is recorded")
            #expect(try await post("c1", Self.background2).status == .ok)
            document = try await client.sesac(.get, "/v1/user/shop/myinfo", uid: "c1").decode(ClientUserDocument.self)
            #expect(document.backgroundCollection == [0, 2])

            // Posting again is a duplicate: 200, nothing written.
            let settled = try await ledgerRowCounts(db.client)
            #expect(try await post("c1", Self.face3).status == .ok)
            #expect(try await ledgerRowCounts(db.client) == settled)

            // The refunded entry is recorded as Apple reports it, purchase and refund together: not owned.
            let refunded = try await post("c1", Self.face4)
            #expect(refunded.status == .ok, "recorded, as a revoked signed transaction is")
            #expect(refunded.body.contains("refunded"))
            document = try await client.sesac(.get, "/v1/user/shop/myinfo", uid: "c1").decode(ClientUserDocument.self)
            #expect(document.sesacCollection == [0, 3])
            let equip = try await client.sesac(
                .post, "/v1/user/shop/item", uid: "c1", form: [("sesac", "4"), ("background", "0")])
            #expect(equip.status == .created, "a refunded item cannot be equipped")
            let admin = try await client.api(.get, "/api/v1/admin/users/c1", token: ServerTest.adminToken)
            let states = (admin.json["purchases"] as? [[String: Any]] ?? []).reduce(into: [String: String]()) {
                $0[$1["transactionId"] as? String ?? "?"] = $1["state"] as? String
            }
            #expect(states == ["c-100": "live", "c-101": "live", "c-102": "refunded"])
            let afterRefund = try await ledgerRowCounts(db.client)
            #expect(try await post("c1", Self.face4).status == .ok)
            #expect(try await ledgerRowCounts(db.client) == afterRefund, "the same refunded entry again writes nothing")

            // Not in the receipt, another user's transaction, another app, an untrusted signer: 201, nothing written.
            let otherApp = TestReceiptPKI.shared.receipt(
                TestReceipt(
                    bundleId: "com.example.other", purchases: [.init(productId: Self.face3, transactionId: "x-1")]))
            let sha1 = TestReceiptPKI.shared.receipt(
                TestReceipt(purchases: [.init(productId: Self.face3, transactionId: "x-2")]), digest: .sha1)
            for (uid, productId, body, reason) in [
                ("c1", product(.face(5)), receipt, "product_not_in_receipt"),
                ("c2", Self.face3, receipt, "transaction_owned_by_another_user"),
                ("c2", Self.face3, otherApp, "wrong_bundle_id"),
                ("c2", Self.face3, sha1, "weak_signature_algorithm"),
            ] {
                let answer = try await post(uid, productId, body)
                #expect(answer.status == .created, "\(reason): \(answer.status)")
                #expect(answer.body.contains(reason), "\(answer.body)")
            }
            #expect(try await ledgerRowCounts(db.client) == afterRefund)

            // A later receipt in which Apple cancelled c-100: posting it takes the item back.
            let later = ServerTest.classicReceipt(
                [(Self.face3, "c-100"), (Self.background2, "c-101"), (Self.face4, "c-102")],
                cancelled: ["c-100", "c-102"])
            let revoked = try await post("c1", Self.face3, later)
            #expect(revoked.status == .ok && revoked.body.contains("refunded"), "\(revoked.body)")
            document = try await client.sesac(.get, "/v1/user/shop/myinfo", uid: "c1").decode(ClientUserDocument.self)
            #expect(document.sesacCollection == [0])
            #expect(document.backgroundCollection == [0, 2])

            let metrics = try await client.send(.get, "/metrics").body
            #expect(metrics.contains(#"shop_receipt_refusals_total{reason="product_not_in_receipt"} 1"#), "\(metrics)")
            #expect(metrics.contains(#"shop_receipt_refusals_total{reason="weak_signature_algorithm"} 1"#))
            #expect(metrics.contains(#"shop_receipt_refusals_total{reason="wrong_bundle_id"} 1"#))
            let report = try await client.api(.get, "/api/v1/admin/reconciliation", token: ServerTest.adminToken)
            #expect(report.json["passed"] as? Bool == true, "\(report.body)")
        }
    }

    @Test("JSON surface: {receipt} records every entry with its own outcome; with productId, the one entry")
    func jsonEveryEntry() async throws {
        try await withShopServer { client, db in
            try await client.signUp("j1")
            try await client.signUp("j2")
            let taken = ServerTest.classicReceipt([(Self.face4, "j-200")])
            #expect(try await client.api(.post, "/api/v1/purchases", uid: "j2", json: ["receipt": taken]).status == .ok)

            let receipt = ServerTest.classicReceipt(
                [
                    (Self.face3, "j-100"), (Self.background2, "j-101"), ("com.memolease.sesac1.sprout99", "j-102"),
                    (Self.face4, "j-200"), (product(.background(3)), "j-103"),
                ],
                cancelled: ["j-103"])
            let answer = try await client.api(.post, "/api/v1/purchases", uid: "j1", json: ["receipt": receipt])
            #expect(answer.status == .ok, "\(answer.body)")
            let entries = try #require(answer.json["entries"] as? [[String: Any]])
            #expect(entries.map { $0["transactionId"] as? String } == ["j-100", "j-101", "j-102", "j-200", "j-103"])
            #expect(
                entries.map { $0["outcome"] as? String } == ["recorded", "recorded", "refused", "refused", "recorded"])
            #expect(
                entries.map { ($0["error"] as? [String: Any])?["code"] as? String } == [
                    nil, nil, "unknown_product", "transaction_owned_by_another_user", nil,
                ])
            let purchase = try #require(entries[0]["purchase"] as? [String: Any])
            #expect(purchase["store"] as? String == "app_store")
            #expect(purchase["environment"] as? String == "Production")
            #expect(purchase["price"] is NSNull, "classic receipts carry no price: recorded unpriced")
            #expect((entries[4]["purchase"] as? [String: Any])?["state"] as? String == "refunded")
            for entry in entries {
                #expect(Set(entry.keys) == ["transactionId", "productId", "outcome", "purchase", "error"])
            }

            let me = try await client.api(.get, "/api/v1/me", uid: "j1")
            #expect((me.json["owned"] as? [String: Any])?["faces"] as? [Int] == [0, 3])
            #expect((me.json["owned"] as? [String: Any])?["backgrounds"] as? [Int] == [0, 2])

            let settled = try await ledgerRowCounts(db.client)
            let again = try await client.api(.post, "/api/v1/purchases", uid: "j1", json: ["receipt": receipt])
            #expect(
                (again.json["entries"] as? [[String: Any]])?.map { $0["outcome"] as? String } == [
                    "duplicate", "duplicate", "refused", "refused", "duplicate",
                ])
            #expect(try await ledgerRowCounts(db.client) == settled)

            // With productId: the single-purchase answer, as for every other proof.
            let single = try await client.api(
                .post, "/api/v1/purchases", uid: "j1", json: ["receipt": receipt, "productId": Self.background2])
            #expect(single.json["duplicate"] as? Bool == true)
            #expect((single.json["purchase"] as? [String: Any])?["transactionId"] as? String == "j-101")
            let absent = try await client.api(
                .post, "/api/v1/purchases", uid: "j1", json: ["receipt": receipt, "productId": product(.background(9))])
            #expect(absent.status.code == 422)
            #expect(absent.errorCode == "product_not_in_receipt")

            // The receipt itself refused: 422 with its reason, nothing written.
            let broken = String(receipt.dropLast(200))
            let refused = try await client.api(.post, "/api/v1/purchases", uid: "j1", json: ["receipt": broken])
            #expect(refused.status.code == 422)
            #expect(refused.errorCode == "malformed_receipt")
            let empty = ServerTest.classicReceipt([])
            #expect(
                (try await client.api(.post, "/api/v1/purchases", uid: "j1", json: ["receipt": empty]).json["entries"]
                    as? [Any])?.isEmpty == true)
            #expect(try await ledgerRowCounts(db.client) == settled)
            #expect(
                try await client.api(.post, "/api/v1/purchases", uid: "nobody", json: ["receipt": receipt]).status
                    == .notFound)
        }
    }
}
