import AsyncHTTPClient
import Foundation
import Logging
import Postgres
import Synchronization
import TestSupport
import Testing

@testable import Webhooks

let testSecret = "whsec_test_0123456789abcdef"

/// Settings that make a test's retries quick: timeout 0.5 s, retries from 50 ms to 300 ms.
func quickSettings(
    timeout: Duration = .milliseconds(500), giveUpAfter: Duration = .seconds(3600), concurrency: Int = 8
) -> WebhookDeliverySettings {
    WebhookDeliverySettings(
        timeout: timeout,
        schedule: WebhookRetrySchedule(
            initial: .milliseconds(50), maximum: .milliseconds(300), giveUpAfter: giveUpAfter),
        concurrency: concurrency, pollInterval: .milliseconds(50))
}

/// Runs `workers` delivery workers (each with a pool and HTTP clients of its own, as separate servers
/// would have) while `body` runs. `destinations` is explicit: the receivers are on loopback, which only
/// `.publicAndLoopback` (`--webhook-allow-loopback`) reaches. `resolver` answers host names (no DNS here).
func withDeliveryWorkers<R: Sendable>(
    _ db: TestDatabase, settings: WebhookDeliverySettings, workers: Int = 1, destinations: WebhookDestinations,
    resolver: any WebhookResolver = StaticResolver([:]), logger: Logger? = nil, _ body: () async throws -> R
) async throws -> R {
    var logger = logger ?? Logger(label: "webhooks-test")
    if logger.label == "webhooks-test" { logger.logLevel = .critical }
    let clients = (0..<workers).map { _ in
        PostgresClient(
            configuration: .init(
                connection: .init(url: db.url), minimumConnections: 0, maximumConnections: 4,
                leaseTimeout: .seconds(120)),
            logger: logger)
    }
    let result: Result<R, any Error>
    do {
        result = .success(
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in clients {
                    let service = WebhookDeliveryService(
                        store: WebhookStore(client: client), settings: settings, userAgent: "test", logger: logger,
                        destinations: destinations, resolver: resolver)
                    group.addTask { try await service.run() }
                }
                defer { group.cancelAll() }
                return try await body()
            })
    } catch {
        result = .failure(error)
    }
    for client in clients { await client.shutdown() }
    return try result.get()
}

/// A resolver with the test's answers (none by default): this machine has no DNS to ask, and a name
/// can be made to resolve to loopback, or to change its answer.
final class StaticResolver: WebhookResolver {
    private let answers: Mutex<[String: [String]]>

    init(_ answers: [String: [String]]) {
        self.answers = Mutex(answers)
    }

    func set(_ host: String, _ addresses: [String]) {
        answers.withLock { $0[host] = addresses }
    }

    func addresses(of host: String) async throws -> [WebhookIPAddress] {
        let texts = answers.withLock { $0[host] } ?? []
        guard !texts.isEmpty else { throw WebhookResolutionError(host: host, reason: "not in the test's answers") }
        return texts.compactMap(WebhookIPAddress.init)
    }
}

/// Waits up to `limit` for `condition`.
func eventually(
    within limit: Duration = .seconds(30), _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () async throws -> Bool
) async throws {
    let start = ContinuousClock.now
    while ContinuousClock.now - start < limit {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    Issue.record("not within \(limit): \(what)", sourceLocation: sourceLocation)
}

/// Registers `users` users and writes `perUser` support grants for each, interleaved, one statement per
/// event: the ledger's triggers write `users × perUser` events. Returns the uids.
@discardableResult
func writeGrantEvents(
    _ client: PostgresClient, users: Int, perUser: Int, prefix: String = "user"
) async throws
    -> [String]
{
    let uids = (0..<users).map { "\(prefix)\($0)" }
    for uid in uids {
        try await client.execute(
            "INSERT INTO users (uid, profile) VALUES (\(uid)::text, '{}') ON CONFLICT (uid) DO NOTHING")
    }
    for round in 0..<perUser {
        for uid in uids {
            try await client.execute(
                """
                INSERT INTO support_actions (kind, uid, item_kind, item_index, actor, reason)
                VALUES ('grant', \(uid)::text, 'face', \(1 + round % 4), 'test', \("round \(round)")::text)
                """)
        }
    }
    return uids
}

func count(_ client: PostgresClient, _ query: PostgresQuery) async throws -> Int {
    try await client.query(query).single().decode(Int.self, at: 0)
}

func outOfOrderUsers(_ deliveries: [WebhookReceiver.Delivery]) -> [String] {
    WebhookReceiver.outOfOrderUsers(deliveries)
}
