import Foundation
import Postgres
import TestSupport
import Testing

@testable import Webhooks

@Suite("Webhooks: signatures, URLs, secrets, schedules")
struct WebhookInputTests {
    @Test("the signature is Stripe's scheme: HMAC-SHA256 of \"t.body\" (vector from Python's hmac)")
    func signatureVector() {
        let body = Array(#"{"id":"evt_1","type":"purchase.recorded","created":1764230400,"data":{}}"#.utf8)
        // python3 -c 'import hmac,hashlib; print(hmac.new(b"whsec_test_0123456789abcdef",
        //     b"1764230400." + body, hashlib.sha256).hexdigest())'
        let expected = "948a72d8064bd1dc83f24d39b177b91935964729e31381b7401296b98b60a148"
        let header = WebhookSignature.header(body: body, secret: testSecret, timestamp: 1_764_230_400)
        #expect(header == "t=1764230400,v1=\(expected)")
        #expect(WebhookSignature.verify(header: header, body: body, secret: testSecret, now: 1_764_230_400 + 299))
        #expect(!WebhookSignature.verify(header: header, body: body, secret: testSecret, now: 1_764_230_400 + 301))
        #expect(!WebhookSignature.verify(header: header, body: body + [0x20], secret: testSecret, now: 1_764_230_400))
        #expect(!WebhookSignature.verify(header: header, body: body, secret: testSecret + "x", now: 1_764_230_400))
        #expect(!WebhookSignature.verify(header: "v1=\(expected)", body: body, secret: testSecret, now: 1_764_230_400))
        #expect(
            WebhookSignature.verify(
                header: "t=1764230400,v1=00,v1=\(expected)", body: body, secret: testSecret, now: 1_764_230_400))
    }

    @Test(
        "URLs: https to public hosts, loopback (http too) only when opted in; no credentials, fragments or odd schemes")
    func urls() throws {
        for good in ["https://hooks.example.com/shop", "https://example.com:8443/a?b=c"] {
            #expect(throws: Never.self) { try WebhookURL(good) }
        }
        for loopback in ["http://127.0.0.1:9000/x", "http://localhost/x", "http://[::1]:8080/x"] {
            #expect(throws: WebhookError.self) { try WebhookURL(loopback) }
            #expect(throws: Never.self) { try WebhookURL(loopback, destinations: .publicAndLoopback) }
        }
        for bad in [
            "http://example.com/x", "http://10.0.0.1/x", "ftp://example.com/x", "https://user:pw@example.com/x",
            "https://example.com/x#frag", "https:///nohost", "not a url", "https://example.com/\u{7F}",
            "http://127.0.0.1.evil.com/x", "https://" + String(repeating: "a", count: 2100),
        ] {
            #expect(throws: WebhookError.self) { try WebhookURL(bad, destinations: .publicAndLoopback) }
        }
    }

    @Test("event type lists and retry delays")
    func typesAndSchedule() throws {
        #expect(
            try WebhookEventType.parseList("purchase.recorded, refund.applied,purchase.recorded")
                == [.purchaseRecorded, .refundApplied])
        #expect(throws: WebhookError.self) { try WebhookEventType.parseList("purchase.recorded,refund.made") }
        #expect(throws: WebhookError.self) { try WebhookEventType.parseList(" , ") }
        let schedule = WebhookRetrySchedule.standard
        #expect(schedule.delay(afterAttempt: 1, random: 1) == .seconds(30))
        #expect(schedule.delay(afterAttempt: 1, random: 0) == .seconds(15))
        #expect(schedule.delay(afterAttempt: 4, random: 1) == .seconds(240))
        #expect(schedule.delay(afterAttempt: 30, random: 1) == .seconds(3600))
        #expect(schedule.delay(afterAttempt: 1_000_000, random: 0.5) == .seconds(2700))
    }

    @Test("bad endpoints are refused with nothing written")
    func refusedEndpoints() async throws {
        try await withTestDatabase { db in
            let store = WebhookStore(client: db.client)
            let url = try WebhookURL("https://hooks.example.com/shop")
            await #expect(throws: WebhookError.self) {
                try await store.addEndpoint(url: url, events: nil, secret: "short", actor: "ops")
            }
            await #expect(throws: WebhookError.self) {
                try await store.addEndpoint(url: url, events: nil, secret: testSecret + " space", actor: "ops")
            }
            await #expect(throws: WebhookError.self) {
                try await store.addEndpoint(url: url, events: nil, secret: testSecret, actor: "")
            }
            #expect(try await store.endpoints().isEmpty)
            let added = try await store.addEndpoint(
                url: url, events: [.refundApplied], secret: testSecret, description: "finance", actor: "ops")
            #expect(added.events == [.refundApplied] && added.enabled && added.createdBy == "ops" && added.pending == 0)
        }
    }

    @Test("the outbox and the attempts are append-only")
    func appendOnly() async throws {
        try await withTestDatabase { db in
            try await addListeningEndpoint(db.client)
            try await writeGrantEvents(db.client, users: 1, perUser: 1)
            for statement: PostgresQuery in [
                "UPDATE webhook_outbox SET uid = 'x'", "DELETE FROM webhook_outbox", "TRUNCATE webhook_outbox",
                "TRUNCATE webhook_attempts",
            ] {
                await #expect(throws: PostgresError.self) { try await db.client.execute(statement) }
            }
            #expect(try await count(db.client, "SELECT count(*) FROM webhook_outbox") == 1)
        }
    }
}
