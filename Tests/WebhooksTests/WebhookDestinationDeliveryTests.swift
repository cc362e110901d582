import Foundation
import Logging
import Postgres
import TestSupport
import Testing

@testable import Webhooks

/// Destinations checked at each delivery, on the addresses the host resolves to (DNS rebinding), the
/// connection made to the address checked, and attempts that record error classes, never socket errors.
/// The resolver is the test's: no DNS is asked, and nothing but loopback is ever connected to.
@Suite("Webhooks: destinations checked at delivery; error classes", .serialized)
struct WebhookDestinationDeliveryTests {
    /// What an attempt's `error` may say (docs/webhooks.md, "Attempts").
    static let vocabulary: Set<String> = [
        "timeout", "dns_failed", "connection_failed", "tls_failed", "http_status", "redirect_not_followed",
        "destination_refused",
    ]

    /// An endpoint stored as it is: an endpoint added before this check, or added with the opt-in by
    /// another server.
    static func storeEndpoint(_ client: PostgresClient, url: String) async throws -> Int64 {
        try await client.query(
            """
            INSERT INTO webhook_endpoints (url, secret, created_by) VALUES (\(url)::text, \(testSecret)::text, 'test')
            RETURNING endpoint_id
            """
        ).single().decode(Int64.self, at: 0)
    }

    static func errors(_ client: PostgresClient, endpoint: Int64) async throws -> [String?] {
        try await client.query(
            "SELECT error FROM webhook_attempts WHERE endpoint_id = \(endpoint) ORDER BY attempt_id"
        ).map { try $0.decode(String?.self, at: 0) }
    }

    @Test("a host name that passed creation but resolves to loopback is refused at delivery, and retried")
    func rebindingRefused() async throws {
        try await withTestDatabase { db in
            let receiver = WebhookReceiver(secret: testSecret, port: try TestCluster.freePort())
            // Accepted when added: a public-looking name, over https.
            let url = try WebhookURL("https://rebind.shopledger.test:\(receiver.port)/hooks")
            let named = try await WebhookStore(client: db.client).addEndpoint(
                url: url, events: nil, secret: testSecret, actor: "test")
            // Stored earlier (with the opt-in, or before destinations were checked): plain http to loopback.
            let localhost = try await Self.storeEndpoint(db.client, url: "http://localhost:\(receiver.port)/hooks")
            let literal = try await Self.storeEndpoint(db.client, url: "http://127.0.0.1:\(receiver.port)/hooks")
            let resolver = StaticResolver([
                "rebind.shopledger.test": ["127.0.0.1"], "localhost": ["127.0.0.1", "::1"],
            ])
            try await writeGrantEvents(db.client, users: 1, perUser: 1)
            try await receiver.serving {
                try await withDeliveryWorkers(
                    db, settings: quickSettings(), destinations: .publicOnly, resolver: resolver
                ) {
                    for endpoint in [named.endpointId, localhost, literal] {
                        try await eventually("endpoint \(endpoint) refused twice") {
                            try await Self.errors(db.client, endpoint: endpoint).count >= 2
                        }
                    }
                }
            }
            #expect(receiver.requests == 0, "nothing reached the receiver: \(receiver.paths)")
            for endpoint in [named.endpointId, localhost, literal] {
                let errors = try await Self.errors(db.client, endpoint: endpoint)
                #expect(errors.allSatisfy { $0 == "destination_refused" }, "endpoint \(endpoint): \(errors)")
            }
            // Retried like any failure (DNS may change back; the endpoint is marked failing in time): still queued.
            #expect(try await count(db.client, "SELECT count(*) FROM webhook_pending") == 3)
            #expect(
                try await count(db.client, "SELECT count(*) FROM webhook_attempts WHERE status_code IS NOT NULL") == 0)
        }
    }

    @Test("a name is delivered to the address it was checked at; a new answer moves it, a mixed one refuses it")
    func pinnedToTheCheckedAddress() async throws {
        try await withTestDatabase { db in
            let receiver = WebhookReceiver(secret: testSecret, port: try TestCluster.freePort())
            // A name only the test's resolver knows: the HTTP client resolving it again would fail.
            let host = "receiver.shopledger.test"
            let endpoint = try await Self.storeEndpoint(db.client, url: "http://\(host):\(receiver.port)/hooks")
            let resolver = StaticResolver([host: ["127.0.0.1"]])
            try await receiver.serving {
                try await withDeliveryWorkers(
                    db, settings: quickSettings(), destinations: .publicAndLoopback, resolver: resolver
                ) {
                    try await writeGrantEvents(db.client, users: 1, perUser: 2, prefix: "first")
                    try await eventually("two deliveries to the pinned address") { receiver.deliveries.count == 2 }
                    #expect(receiver.hosts.allSatisfy { $0 == "\(host):\(receiver.port)" }, "\(receiver.hosts)")

                    // The name moves to 127.0.0.2, where nothing listens: the pooled connection to
                    // 127.0.0.1 is not used for it.
                    resolver.set(host, ["127.0.0.2"])
                    try await writeGrantEvents(db.client, users: 1, perUser: 1, prefix: "moved")
                    try await eventually("a failed attempt at the new address") {
                        try await Self.errors(db.client, endpoint: endpoint).contains("connection_failed")
                    }
                    #expect(receiver.deliveries.count == 2)

                    // One answer of several is private: refused, though the other is allowed.
                    resolver.set(host, ["127.0.0.1", "10.0.0.1"])
                    try await eventually("refused for the private answer") {
                        try await Self.errors(db.client, endpoint: endpoint).contains("destination_refused")
                    }
                    #expect(receiver.deliveries.count == 2)

                    resolver.set(host, ["127.0.0.1"])
                    try await eventually("delivered again at the checked address") { receiver.deliveries.count == 3 }
                }
            }
            #expect(receiver.badSignatures == 0)
        }
    }

    @Test("attempts record error classes, never socket or TLS errors; the details go to the log")
    func errorClasses() async throws {
        try await withTestDatabase { db in
            let receiver = WebhookReceiver(secret: testSecret, port: try TestCluster.freePort())
            let closed = try TestCluster.freePort()
            let store = WebhookStore(client: db.client)
            func add(_ url: String) async throws -> Int64 {
                try await store.addEndpoint(
                    url: try WebhookURL(url, destinations: .publicAndLoopback), events: nil, secret: testSecret,
                    actor: "test"
                ).endpointId
            }
            let refusedPort = try await add("http://127.0.0.1:\(closed)/hooks")
            // TLS to the receiver's plain HTTP.
            let tls = try await add("https://127.0.0.1:\(receiver.port)/hooks")
            let status = try await add("http://127.0.0.1:\(receiver.port)/hooks")
            let unresolved = try await add("https://nowhere.shopledger.test/hooks")
            let logs = LogRecorder()
            receiver.set(.status(503))
            try await writeGrantEvents(db.client, users: 1, perUser: 1)
            try await receiver.serving {
                // A timeout well past a refused connect or a failed handshake: beside every other suite, 0.5 s
                // was passed by both (they were recorded as timeouts).
                try await withDeliveryWorkers(
                    db, settings: quickSettings(timeout: .seconds(5)), destinations: .publicAndLoopback,
                    resolver: StaticResolver([:]), logger: logs.logger
                ) {
                    for endpoint in [refusedPort, tls, status, unresolved] {
                        try await eventually("endpoint \(endpoint) tried") {
                            try await !Self.errors(db.client, endpoint: endpoint).isEmpty
                        }
                    }
                }
            }
            #expect(try await Self.errors(db.client, endpoint: refusedPort).first == "connection_failed")
            #expect(try await Self.errors(db.client, endpoint: tls).first == "tls_failed")
            #expect(try await Self.errors(db.client, endpoint: status).first == "http_status")
            #expect(try await Self.errors(db.client, endpoint: unresolved).first == "dns_failed")
            let statusCode = try await db.client.query(
                "SELECT status_code FROM webhook_attempts WHERE endpoint_id = \(status) LIMIT 1"
            ).single().decode(Int?.self, at: 0)
            #expect(statusCode == 503, "the status of an answer is kept")
            let errors = try await db.client.query("SELECT DISTINCT error FROM webhook_attempts").map {
                try $0.decode(String?.self, at: 0)
            }
            #expect(errors.allSatisfy { $0.map(Self.vocabulary.contains) ?? false }, "\(errors)")
            // The operator's log has what happened, attempt by attempt.
            let failures = logs.entries.filter { $0.message.contains("webhook delivery failed") }
            #expect(
                failures.contains {
                    $0.metadata["error"] == "connection_failed" && !($0.metadata["detail"] ?? "").isEmpty
                },
                "\(failures)")
            #expect(failures.contains { $0.metadata["error"] == "tls_failed" && $0.metadata["detail"] != nil })
        }
    }
}
