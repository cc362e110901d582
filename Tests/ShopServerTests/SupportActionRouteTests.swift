import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Postgres
import TestSupport
import Testing

@testable import ShopServer

@Suite("Support actions over HTTP")
struct SupportActionRouteTests {
    static let admin = ServerTest.adminToken

    @Test("grant, look up, revoke: the admin token's label is the actor, the reason is kept, reconcile passes")
    func grantLookUpRevoke() async throws {
        try await withShopServer(configure: { $0.auth.adminLabel = "support-kim" }) { client, db in
            try await client.signUp("alice")
            let bought = try await client.api(
                .post, "/api/v1/purchases", uid: "alice",
                json: ["receipt": ServerTest.stubReceipt(product(.face(2)), transaction: "t-42")])
            #expect(bought.status == .ok || bought.status == .created, "\(bought.body)")

            let granted = try await client.api(
                .post, "/api/v1/admin/grants", token: Self.admin,
                json: [
                    "uid": "alice", "kind": "face", "index": 3, "reason": "lost in an outage", "transactionId": "t-42",
                ])
            #expect(granted.status == .created, "\(granted.body)")
            #expect(granted.json["actor"] as? String == "support-kim")
            #expect(granted.json["reason"] as? String == "lost in an outage")
            let grantId = try #require(granted.json["actionId"] as? Int)
            let me = try await client.api(.get, "/api/v1/me", uid: "alice")
            #expect(((me.json["owned"] as? [String: Any])?["faces"] as? [Int]) == [0, 2, 3], "\(me.body)")

            let lookup = try await client.api(.get, "/api/v1/admin/purchases/t-42", token: Self.admin)
            #expect(lookup.status == .ok, "\(lookup.body)")
            let record = try #require((lookup.json["records"] as? [[String: Any]])?.first)
            #expect((record["entries"] as? [[String: Any]])?.map { $0["kind"] as? String } == ["purchase"])
            #expect((record["supportActions"] as? [[String: Any]])?.first?["actionId"] as? Int == grantId)

            // A NUL in the reason (schemathesis found it: a 500 from PostgreSQL) is bad input: 422, nothing written.
            let nul = try await client.api(
                .post, "/api/v1/admin/grants/\(grantId)/revoke", token: Self.admin, json: ["reason": "r\u{0}"])
            #expect(nul.status == .unprocessableContent && nul.errorCode == "invalid_input", "\(nul.body)")
            let revoked = try await client.api(
                .post, "/api/v1/admin/grants/\(grantId)/revoke", token: Self.admin, json: ["reason": "wrong user"])
            #expect(revoked.status == .ok, "\(revoked.body)")
            #expect(revoked.json["revokes"] as? Int == grantId && revoked.json["actor"] as? String == "support-kim")
            let again = try await client.api(
                .post, "/api/v1/admin/grants/\(grantId)/revoke", token: Self.admin, json: ["reason": "twice"])
            #expect(again.status == .conflict && again.errorCode == "already_revoked")

            let history = try await client.api(.get, "/api/v1/admin/users/alice/history", token: Self.admin)
            #expect(history.status == .ok)
            let actions = try #require(history.json["supportActions"] as? [[String: Any]])
            #expect(actions.map { $0["kind"] as? String } == ["grant", "revoke"])
            #expect(actions.first?["revokedBy"] as? Int == revoked.json["actionId"] as? Int)

            let reconciliation = try await client.api(.get, "/api/v1/admin/reconciliation", token: Self.admin)
            #expect(reconciliation.status == .ok, "\(reconciliation.body)")
            #expect(try await Reconciler(client: db.client).run().passed)
        }
    }

    @Test("only the admin token; a missing reason, an unknown user or item, a bad id: clear errors, nothing written")
    func refusals() async throws {
        try await withShopServer { client, db in
            try await client.signUp("bob")
            let grant: [String: Any] = ["uid": "bob", "kind": "face", "index": 3, "reason": "goodwill"]
            #expect(
                try await client.api(.post, "/api/v1/admin/grants", uid: "bob", json: grant).status == .unauthorized)
            #expect(try await client.api(.post, "/api/v1/admin/grants", json: grant).status == .unauthorized)
            let refused: [([String: Any], HTTPResponse.Status, String)] = [
                (grant.merging(["reason": "  "]) { $1 }, .unprocessableContent, "invalid_input"),
                (grant.filter { $0.key != "reason" }, .badRequest, "invalid_json"),
                (grant.merging(["uid": "nobody"]) { $1 }, .notFound, "user_not_registered"),
                (grant.merging(["index": 99]) { $1 }, .unprocessableContent, "no_such_item"),
                (grant.merging(["kind": "hat"]) { $1 }, .unprocessableContent, "invalid_input"),
            ]
            for (body, status, code) in refused {
                let answer = try await client.api(.post, "/api/v1/admin/grants", token: Self.admin, json: body)
                #expect(answer.status == status && answer.errorCode == code, "\(body): \(answer.status) \(answer.body)")
            }
            let revoke = try await client.api(
                .post, "/api/v1/admin/grants/123456/revoke", token: Self.admin, json: ["reason": "r"])
            #expect(revoke.status == .notFound && revoke.errorCode == "no_such_grant")
            let badId = try await client.api(
                .post, "/api/v1/admin/grants/abc/revoke", token: Self.admin, json: ["reason": "r"])
            #expect(badId.status == .unprocessableContent && badId.errorCode == "invalid_input")
            let unknown = try await client.api(.get, "/api/v1/admin/purchases/none", token: Self.admin)
            #expect(unknown.status == .notFound && unknown.errorCode == "no_such_purchase")
            #expect(
                try await db.client.query("SELECT count(*) FROM support_actions").single().decode(Int.self, at: 0) == 0)
        }
    }
}
