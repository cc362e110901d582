import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Postgres
import Receipts
import Reports
import TestSupport
import Testing

@testable import ShopServer

@Suite("JSON surface")
struct JSONSurfaceTests {
    @Test("register, me, equip: 201/200, 404 before registering, 409 not owned, 422 no such item, 400/415 bad bodies")
    func meAndEquip() async throws {
        try await withShopServer { client, db in
            let notYet = try await client.api(.get, "/api/v1/me", uid: "j1")
            #expect(notYet.status == .notFound && notYet.errorCode == "user_not_registered")
            #expect(try await client.api(.post, "/api/v1/me", uid: "j1").status == .created)
            let again = try await client.api(.post, "/api/v1/me", uid: "j1", json: ["nick": "json"])
            #expect(again.status == .ok)
            let me = try await client.api(.get, "/api/v1/me", uid: "j1")
            #expect(me.status == .ok)
            #expect(me.json["uid"] as? String == "j1")
            #expect((me.json["equipped"] as? [String: Int]) == ["face": 0, "background": 0])
            #expect((me.json["owned"] as? [String: [Int]]) == ["faces": [0], "backgrounds": [0]])

            let before = try await ledgerRowCounts(db.client)
            let notOwned = try await client.api(
                .put, "/api/v1/me/equipped", uid: "j1", json: ["face": 3, "background": 0])
            #expect(notOwned.status == .conflict && notOwned.errorCode == "item_not_owned")
            let noSuch = try await client.api(
                .put, "/api/v1/me/equipped", uid: "j1", json: ["face": 99, "background": 0])
            #expect(noSuch.status == .unprocessableContent && noSuch.errorCode == "no_such_item")
            for body: Any in [
                ["face": "3", "background": 0], ["face": 1e30, "background": 0], ["face": 1], [1, 2], "x", NSNull(),
            ] {
                let answer = try await client.api(.put, "/api/v1/me/equipped", uid: "j1", json: body)
                #expect(answer.status == .badRequest, "\(body): \(answer.status) \(answer.body)")
            }
            let form = try await client.send(
                .put, "/api/v1/me/equipped",
                headers: [.authorization: "Bearer dev:j1", .contentType: "application/x-www-form-urlencoded"],
                body: Array("face=0&background=0".utf8))
            #expect(form.status == .unsupportedMediaType)
            let notJSON = try await client.send(
                .put, "/api/v1/me/equipped",
                headers: [.authorization: "Bearer dev:j1", .contentType: "application/json"],
                body: [0x7B, 0xFF, 0xFE])
            #expect(notJSON.status == .badRequest)
            #expect(
                try await client.api(.put, "/api/v1/me/equipped", json: ["face": 0, "background": 0]).status
                    == .unauthorized)
            #expect(
                try await client.api(.put, "/api/v1/me/equipped", uid: "j1", json: ["face": 0, "background": 0]).status
                    == .ok)
            #expect(try await ledgerRowCounts(db.client) == before)
        }
    }

    @Test(
        "purchases: signed transaction or receipt, 200 then duplicate, 409 another user's, 422 refused, 404 unregistered"
    )
    func purchases() async throws {
        try await withShopServer { client, db in
            _ = try await client.api(.post, "/api/v1/me", uid: "j1")
            _ = try await client.api(.post, "/api/v1/me", uid: "j2")
            let jws = ServerTest.signedTransaction(product(.face(4)), transaction: "2000000900000001")
            let first = try await client.api(.post, "/api/v1/purchases", uid: "j1", json: ["signedTransaction": jws])
            #expect(first.status == .ok, "\(first.body)")
            #expect(first.json["duplicate"] as? Bool == false)
            let purchase = first.json["purchase"] as? [String: Any]
            #expect(purchase?["transactionId"] as? String == "2000000900000001")
            #expect(purchase?["environment"] as? String == "Production" && purchase?["state"] as? String == "live")
            #expect((purchase?["price"] as? [String: Any])?["amountMilli"] as? Int == 2_500_000)
            #expect((purchase?["item"] as? [String: Any])?["index"] as? Int == 4)

            let before = try await ledgerRowCounts(db.client)
            let again = try await client.api(.post, "/api/v1/purchases", uid: "j1", json: ["signedTransaction": jws])
            #expect(again.status == .ok && again.json["duplicate"] as? Bool == true)
            // Apple re-signs a transaction when it is fetched again: still the same purchase.
            let resigned = ServerTest.signedTransaction(
                product(.face(4)), transaction: "2000000900000001", signedDate: Date().addingTimeInterval(0.005))
            #expect(resigned != jws)
            #expect(
                try await client.api(.post, "/api/v1/purchases", uid: "j1", json: ["signedTransaction": resigned]).json[
                    "duplicate"] as? Bool == true)
            let stolen = try await client.api(.post, "/api/v1/purchases", uid: "j2", json: ["signedTransaction": jws])
            #expect(stolen.status == .conflict && stolen.errorCode == "transaction_owned_by_another_user")

            let header = TestPKI.base64URL(Data(#"{"alg":"none"}"#.utf8))
            let unsigned = header + "." + TestPKI.base64URL(TestPKI.json(["transactionId": "1"])) + "."
            let forged = jws.dropLast(4) + "AAAA"
            let refusals: [([String: Any], String)] = [
                (["signedTransaction": unsigned], "unsupported_algorithm"),
                (["signedTransaction": String(forged)], "invalid_signature"),
                (
                    ["signedTransaction": ServerTest.signedTransaction(product(.face(1)), environment: "Xcode")],
                    "wrong_environment"
                ),
                (
                    ["signedTransaction": ServerTest.signedTransaction("com.memolease.sesac1.sprout77")],
                    "unknown_product"
                ),
                (["signedTransaction": "junk"], "malformed"),
                (
                    ["receipt": ServerTest.stubReceipt(product(.face(1))), "productId": product(.face(2))],
                    "product_not_in_receipt"
                ),
            ]
            for (body, code) in refusals {
                let answer = try await client.api(.post, "/api/v1/purchases", uid: "j2", json: body)
                #expect(
                    answer.status == .unprocessableContent && answer.errorCode == code,
                    "\(code): \(answer.status) \(answer.body)")
            }
            for body: Any in [
                [:] as [String: Any], ["signedTransaction": jws, "receipt": "x"], ["signedTransaction": 5],
                ["signedTransaction": ""],
            ] {
                #expect(
                    try await client.api(.post, "/api/v1/purchases", uid: "j2", json: body).status == .badRequest,
                    "\(body)")
            }
            let unregistered = try await client.api(
                .post, "/api/v1/purchases", uid: "nobody",
                json: ["signedTransaction": ServerTest.signedTransaction(product(.face(1)))])
            #expect(unregistered.status == .notFound && unregistered.errorCode == "user_not_registered")
            #expect(
                try await client.api(.post, "/api/v1/purchases", token: "garbage", json: ["signedTransaction": jws])
                    .status == .unauthorized)
            #expect(try await ledgerRowCounts(db.client) == before)

            let receipt = try await client.api(
                .post, "/api/v1/purchases", uid: "j2",
                json: [
                    "receipt": ServerTest.stubReceipt(product(.background(5))), "productId": product(.background(5)),
                ])
            #expect(
                receipt.status == .ok && (receipt.json["purchase"] as? [String: Any])?["store"] as? String == "stub")
        }
    }

    @Test("App Store notifications: stored once, REFUND applied, duplicates 200, unverifiable 400 with nothing written")
    func notifications() async throws {
        try await withShopServer { client, db in
            _ = try await client.api(.post, "/api/v1/me", uid: "j1")
            let jws = ServerTest.signedTransaction(product(.background(6)), transaction: "2000000900000002")
            #expect(
                try await client.api(.post, "/api/v1/purchases", uid: "j1", json: ["signedTransaction": jws]).status
                    == .ok)
            let refund = ServerTest.signedNotification(
                "REFUND", signedTransaction: jws, uuid: "11111111-2222-3333-4444-555555555555")
            let stored = try await client.api(.post, "/api/v1/notifications/app-store", json: ["signedPayload": refund])
            #expect(stored.status == .ok, "\(stored.body)")
            #expect(stored.json["storage"] as? String == "stored" && stored.json["ledger"] as? String == "applied")
            #expect(
                (try await client.api(.get, "/api/v1/me", uid: "j1").json["owned"] as? [String: [Int]])?["backgrounds"]
                    == [0])

            let before = try await ledgerRowCounts(db.client)
            let duplicate = try await client.api(
                .post, "/api/v1/notifications/app-store", json: ["signedPayload": refund])
            #expect(duplicate.status == .ok && duplicate.json["storage"] as? String == "duplicate")
            let bad: [Any] = [
                ["signedPayload": "not a jws"], ["signedPayload": String(refund.dropLast(3)) + "abc"],
                ["payload": refund],
                [
                    "signedPayload": ServerTest.stubNotification(.refund, transaction: "x", product: product(.face(1)))
                        .replacingOccurrences(of: "hmac", with: "hmaC")
                ],
            ]
            for body in bad {
                let answer = try await client.api(.post, "/api/v1/notifications/app-store", json: body)
                #expect(answer.status == .badRequest, "\(answer.body)")
            }
            #expect(try await ledgerRowCounts(db.client) == before)
            // A TEST notification is stored and asks nothing of the ledger.
            let test = ServerTest.pki.sign([
                "notificationType": "TEST", "notificationUUID": "test-1",
                "signedDate": Int64(Date().timeIntervalSince1970 * 1000),
                "data": ["environment": "Production", "bundleId": ServerTest.bundleId] as [String: Any],
            ])
            let testAnswer = try await client.api(
                .post, "/api/v1/notifications/app-store", json: ["signedPayload": test])
            #expect(testAnswer.status == .ok && testAnswer.json["ledger"] as? String == "none")
        }
    }

    @Test("admin endpoints need the admin token; the user look-up lists purchases; reconciliation passes")
    func admin() async throws {
        try await withShopServer { client, _ in
            try await client.signUp("a1")
            let receipt = ServerTest.stubReceipt(product(.face(3)), transaction: "stub-admin")
            #expect(
                try await client.sesac(
                    .post, "/v1/user/shop/ios", uid: "a1", form: [("receipt", receipt), ("product", product(.face(3)))]
                ).status == .ok)
            for token in [nil, "dev:a1", "wrong-admin-token-0123456789"] as [String?] {
                let answer = try await client.api(.get, "/api/v1/admin/users/a1", token: token)
                #expect(answer.status == .unauthorized, "token \(token ?? "none")")
            }
            let user = try await client.api(.get, "/api/v1/admin/users/a1", token: ServerTest.adminToken)
            #expect(user.status == .ok)
            let purchases = user.json["purchases"] as? [[String: Any]]
            #expect(purchases?.count == 1 && purchases?.first?["transactionId"] as? String == "stub-admin")
            #expect(
                try await client.api(.get, "/api/v1/admin/users/nobody", token: ServerTest.adminToken).status
                    == .notFound)
            let report = try await client.api(.get, "/api/v1/admin/reconciliation", token: ServerTest.adminToken)
            #expect(report.status == .ok && report.json["passed"] as? Bool == true, "\(report.body)")
            // The same checks as `shopledger reconcile`: the ledger's and the reports' (ServerHooks, as serve).
            let names = (report.json["checks"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
            #expect(names == ReconciliationChecks.all.map(\.name), "\(report.body)")
            #expect(names?.contains("report_totals_match_ledger") == true)
            #expect(try await client.api(.get, "/api/v1/admin/reconciliation").status == .unauthorized)
        }
    }

    @Test("metrics count requests by route and status, purchases by outcome and refusals by reason, and show the pool")
    func metrics() async throws {
        try await withShopServer { client, _ in
            try await client.signUp("m1")
            let receipt = ServerTest.stubReceipt(product(.face(1)))
            let form = [("receipt", receipt), ("product", product(.face(1)))]
            _ = try await client.sesac(.post, "/v1/user/shop/ios", uid: "m1", form: form)
            _ = try await client.sesac(.post, "/v1/user/shop/ios", uid: "m1", form: form)
            _ = try await client.sesac(
                .post, "/v1/user/shop/ios", uid: "m1", form: [("receipt", "junk"), ("product", "p")])
            let answer = try await client.send(.get, "/metrics")
            #expect(answer.status == .ok)
            #expect(answer.headers[.contentType]?.hasPrefix("text/plain") == true)
            let text = answer.body
            #expect(
                text.contains(#"http_requests_total{route="/v1/user/shop/ios",method="POST",status="200"} 2"#),
                "\(text)")
            #expect(text.contains(#"http_requests_total{route="/v1/user/shop/ios",method="POST",status="201"} 1"#))
            #expect(text.contains(#"shop_purchases_total{outcome="recorded"} 1"#))
            #expect(text.contains(#"shop_purchases_total{outcome="duplicate"} 1"#))
            #expect(text.contains(#"shop_receipt_refusals_total{reason="malformed"} 1"#))
            #expect(text.contains("http_request_duration_seconds_bucket"))
            #expect(text.contains(#"shop_db_pool_connections{state="open"}"#))
        }
    }

    @Test("every response carries a request id; unknown routes are JSON 404s")
    func requestIdsAndNotFound() async throws {
        try await withShopServer { client, _ in
            let first = try await client.send(.get, "/healthz")
            let second = try await client.send(.get, "/no/such/route")
            #expect(second.status == .notFound && second.errorCode == "not_found")
            let ids = [first, second].compactMap { $0.headers[HTTPField.Name("x-request-id")!] }
            #expect(ids.count == 2 && ids[0] != ids[1])
        }
    }

    @Test("a request slower than the timeout is cancelled: 503 on the JSON surface, 500 on SeSAC's, nothing written")
    func timeout() async throws {
        // The timeout leaves ordinary requests (sign-up) room even on a loaded machine; only the minute-long proof hits it.
        try await withShopServer(configure: { $0.requestTimeout = .seconds(3) }, prover: SlowProver()) { client, db in
            try await client.signUp("t1")
            let before = try await ledgerRowCounts(db.client)
            // Answered at the timeout, not when the work ended (60 s): that would be the prover's refusal.
            let json = try await client.api(.post, "/api/v1/purchases", uid: "t1", json: ["signedTransaction": "x.y.z"])
            #expect(json.status == .serviceUnavailable && json.errorCode == "request_timeout")
            let sesac = try await client.sesac(
                .post, "/v1/user/shop/ios", uid: "t1", form: [("receipt", "r"), ("product", "p")])
            #expect(sesac.status == .internalServerError && sesac.body.contains("request_timeout"), "\(sesac.body)")
            #expect(try await ledgerRowCounts(db.client) == before)
        }
    }
}

/// A prover that takes a minute: to see a request time out.
struct SlowProver: PurchaseOnlyProver {
    func prove(receipt: String, productId: String?) async throws(ReceiptRefusal) -> VerifiedTransaction {
        try? await Task.sleep(for: .seconds(60))
        throw ReceiptRefusal(.malformed, "slow")
    }
}
