import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Postgres
import TestSupport
import Testing
import Webhooks

@testable import ShopServer

@Suite("Webhook endpoints over HTTP: /api/v1/admin/webhooks")
struct AdminWebhookRouteTests {
    static let admin = ServerTest.adminToken

    @Test("add (a secret made and shown once), list without secrets, replay, an event's attempts, disable")
    func endpoints() async throws {
        // No delivery worker: the event must stay queued with no attempt while it is read and replayed (a
        // worker tried it, to an address that does not answer, in a clean clone's run, 11-29).
        try await withShopServer(configure: {
            $0.auth.adminLabel = "ops-lee"
            $0.webhooks = nil
        }) { client, db in
            let added = try await client.api(
                .post, "/api/v1/admin/webhooks", token: Self.admin,
                json: ["url": "https://hooks.example.com/shop", "events": ["purchase.recorded", "refund.applied"]])
            #expect(added.status == .created, "\(added.body)")
            let secret = try #require(added.json["secret"] as? String)
            #expect(secret.hasPrefix("whsec_") && secret.count == 6 + 64)
            #expect(added.json["createdBy"] as? String == "ops-lee")
            let id = try #require(added.json["endpointId"] as? Int)

            // A purchase over HTTP writes its event and queues it for the endpoint.
            try await client.signUp("alice")
            let bought = try await client.api(
                .post, "/api/v1/purchases", uid: "alice",
                json: ["receipt": ServerTest.stubReceipt(product(.face(2)), transaction: "t-7")])
            #expect(bought.status == .ok || bought.status == .created, "\(bought.body)")
            let listed = try await client.api(.get, "/api/v1/admin/webhooks", token: Self.admin)
            #expect(listed.status == .ok)
            let endpoint = try #require((listed.json["endpoints"] as? [[String: Any]])?.first)
            #expect(endpoint["pending"] as? Int == 1 && endpoint["enabled"] as? Bool == true)
            #expect(endpoint["secret"] is NSNull || endpoint["secret"] == nil, "a secret is never listed")
            #expect(!listed.body.contains(secret))

            let eventId = try await db.client.query("SELECT max(event_id) FROM webhook_outbox").single()
                .decode(Int64.self, at: 0)
            let shown = try await client.api(.get, "/api/v1/admin/webhooks/events/evt_\(eventId)", token: Self.admin)
            #expect(shown.status == .ok && shown.json["type"] as? String == "purchase.recorded", "\(shown.body)")
            #expect((shown.json["attempts"] as? [Any])?.isEmpty == true)

            let replayed = try await client.api(
                .post, "/api/v1/admin/webhooks/replay", token: Self.admin, json: ["eventId": "evt_\(eventId)"])
            // Still queued: a replay does not queue an event twice for one endpoint.
            #expect(replayed.status == .ok && replayed.json["queued"] as? Int == 0, "\(replayed.body)")
            let range = try await client.api(
                .post, "/api/v1/admin/webhooks/replay", token: Self.admin,
                json: ["from": "2000-01-01T00:00:00Z", "to": "2100-01-01T00:00:00Z", "types": ["refund.applied"]])
            #expect(range.status == .ok && range.json["queued"] as? Int == 0, "\(range.body)")

            let disabled = try await client.api(.post, "/api/v1/admin/webhooks/\(id)/disable", token: Self.admin)
            #expect(disabled.status == .ok && disabled.json["enabled"] as? Bool == false, "\(disabled.body)")
            #expect(disabled.json["disabledBy"] as? String == "ops-lee")
            let again = try await client.api(.post, "/api/v1/admin/webhooks/\(id)/disable", token: Self.admin)
            #expect(again.status == .conflict && again.errorCode == "already_disabled")
        }
    }

    @Test("non-public destinations are refused with destination_refused; loopback only with the opt-in")
    func destinations() async throws {
        let refused = [
            "https://169.254.169.254/latest/meta-data", "https://10.0.0.1/x", "https://192.168.1.1/x",
            "https://[fd00::1]/x", "https://[::ffff:127.0.0.1]/x", "https://127.1/x", "https://2130706433/x",
            "https://0x7f.1/x", "https://0177.0.0.1/x", "https://localhost/x", "http://127.0.0.1:5432/x",
            "http://[::1]:22/x",
        ]
        try await withShopServer { client, db in
            for url in refused {
                let answer = try await client.api(
                    .post, "/api/v1/admin/webhooks", token: Self.admin, json: ["url": url])
                #expect(
                    answer.status == .unprocessableContent && answer.errorCode == "destination_refused",
                    "\(url): \(answer.body)")
            }
            #expect(
                try await db.client.query("SELECT count(*) FROM webhook_endpoints").single().decode(Int.self, at: 0)
                    == 0)
        }
        try await withShopServer(configure: { $0.webhookDestinations = .publicAndLoopback }) { client, _ in
            for url in ["http://127.0.0.1:9000/hooks", "https://localhost/hooks", "http://[::1]:8080/hooks"] {
                let answer = try await client.api(
                    .post, "/api/v1/admin/webhooks", token: Self.admin, json: ["url": url])
                #expect(answer.status == .created, "\(url) with the opt-in: \(answer.body)")
            }
            for url in refused
            where !url.contains("127.") && !url.contains("localhost") && !url.contains("[::1]")
                && !url.contains("0x7f") && !url.contains("0177") && !url.contains("2130706433")
            {
                let answer = try await client.api(
                    .post, "/api/v1/admin/webhooks", token: Self.admin, json: ["url": url])
                #expect(answer.errorCode == "destination_refused", "\(url) even with the opt-in: \(answer.body)")
            }
        }
    }

    @Test("bad requests get a clear error and write nothing")
    func refusals() async throws {
        try await withShopServer { client, db in
            let cases: [([String: Any], String)] = [
                (["url": "http://hooks.example.com/x"], "invalid_input"),
                (["url": "https://hooks.example.com/x", "events": ["purchase.made"]], "invalid_input"),
                (["url": "https://hooks.example.com/x", "events": [String]()], "invalid_input"),
                (["url": "https://hooks.example.com/x", "secret": "short"], "invalid_input"),
            ]
            for (body, code) in cases {
                let answer = try await client.api(.post, "/api/v1/admin/webhooks", token: Self.admin, json: body)
                #expect(answer.status == .unprocessableContent && answer.errorCode == code, "\(body): \(answer.body)")
            }
            #expect(
                try await db.client.query("SELECT count(*) FROM webhook_endpoints").single().decode(Int.self, at: 0)
                    == 0)
            let missing = try await client.api(.post, "/api/v1/admin/webhooks/99/disable", token: Self.admin)
            #expect(missing.status == .notFound && missing.errorCode == "no_such_endpoint")
            let noEvent = try await client.api(.get, "/api/v1/admin/webhooks/events/evt_99", token: Self.admin)
            #expect(noEvent.status == .notFound && noEvent.errorCode == "no_such_event")
            let badReplay = try await client.api(
                .post, "/api/v1/admin/webhooks/replay", token: Self.admin, json: ["from": "yesterday", "to": "now"])
            #expect(badReplay.status == .unprocessableContent, "\(badReplay.body)")
            #expect(badReplay.json["error"].map { "\($0)".contains("ISO 8601") } == true, "\(badReplay.body)")
            // One parser with the command line's: types go with a range, not with one event.
            let typesWithEvent = try await client.api(
                .post, "/api/v1/admin/webhooks/replay", token: Self.admin,
                json: ["eventId": "evt_1", "types": ["refund.applied"]])
            #expect(
                typesWithEvent.status == .unprocessableContent && typesWithEvent.errorCode == "invalid_input"
                    && typesWithEvent.body.contains("types goes with from and to"), "\(typesWithEvent.body)")
            let user = try await client.api(.get, "/api/v1/admin/webhooks", uid: "alice")
            #expect(user.status == .unauthorized)
        }
    }
}
