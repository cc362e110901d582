import Foundation
import Ledger
import NIOCore
import Postgres
import TestSupport
import Testing
import Webhooks

/// Webhook delivery from the real `shopledger serve`, to a real receiver on loopback that checks every
/// signature, while the server is SIGKILLed and PostgreSQL is stopped with `pg_ctl stop -m immediate`.
@Suite("Faults: webhook delivery through SIGKILL, a database crash, and two servers")
struct WebhookFaultTests {
    static let secret = "whsec_fault_0123456789abcdef"
    /// Quick retries; a 1 s timeout, so a killed server's claims come back after 7 s. The receiver is on
    /// loopback: the servers opt in to loopback destinations.
    static let options = [
        "--webhook-allow-loopback",
        "--webhook-timeout", "1", "--webhook-retry-initial", "0.1", "--webhook-retry-max", "0.5",
        "--webhook-poll-interval", "0.05",
    ]

    @Test(
        "SIGKILL of serve and pg_ctl stop -m immediate during delivery: every committed event arrives, duplicates only under the same id",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(5)))
    func killAndCrashDuringDelivery() async throws {
        try await FaultScenario.run("webhooks-kill") { scenario in
            let receiver = WebhookReceiver(secret: Self.secret, port: try TestCluster.freePort())
            try await receiver.serving {
                // Slow answers keep deliveries in flight when the strikes come.
                receiver.set(.slow(.milliseconds(150)))
                var server = try await scenario.startServer(options: Self.options)
                try await scenario.cluster.withClient { client in
                    _ = try await WebhookStore(client: client).addEndpoint(
                        url: try WebhookURL(receiver.url, destinations: .publicAndLoopback), events: nil,
                        secret: Self.secret, actor: "fault")
                }
                let load = PurchaseLoad(
                    scenario: "hooks", workers: FaultSettings.clients(8), baseURL: server.baseURL,
                    requestTimeout: .seconds(10))
                try await load.registerUsers(scenario.http)

                // 1. SIGKILL while deliveries are in flight.
                try await Self.purchases(load, scenario, until: 150)
                try await Self.waitForDeliveries(receiver, atLeast: 20)
                server.kill()
                #expect(server.child.exit == .signalled(SIGKILL))
                let deliveredAtKill = Set(receiver.deliveries.map(\.id)).count
                let restartedAt = ContinuousClock.now
                server = try await scenario.startServer(options: Self.options)
                receiver.set(.ok)
                let afterKill = try await Self.drain(scenario, receiver)
                let killDrain = ContinuousClock.now - restartedAt
                #expect(
                    afterKill.missing.isEmpty, "events never delivered after the kill: \(afterKill.missing.prefix(5))")
                scenario.report(
                    "SIGKILL: \(afterKill.events) events, \(deliveredAtKill) delivered before the kill, all delivered "
                        + "\(ms(killDrain)) after the restart; \(afterKill.duplicates) duplicate deliveries (same ids)")

                // 2. PostgreSQL stopped with -m immediate while deliveries are in flight, then restarted.
                receiver.set(.slow(.milliseconds(150)))
                let reload = PurchaseLoad(
                    scenario: "hooks2", workers: FaultSettings.clients(8), baseURL: server.baseURL,
                    requestTimeout: .seconds(10))
                try await reload.registerUsers(scenario.http)
                try await Self.purchases(reload, scenario, until: 150)
                let before = receiver.deliveries.count
                try await Self.waitForDeliveries(receiver, atLeast: before + 20)
                try await scenario.cluster.stopImmediately()
                try await Task.sleep(for: .seconds(1))
                try await scenario.cluster.restart()
                let crashRestartedAt = ContinuousClock.now
                receiver.set(.ok)
                let afterCrash = try await Self.drain(scenario, receiver)
                #expect(
                    afterCrash.missing.isEmpty,
                    "events never delivered after the crash: \(afterCrash.missing.prefix(5))")
                scenario.report(
                    "pg_ctl stop -m immediate: \(afterCrash.events) events in all, every one delivered "
                        + "\(ms(ContinuousClock.now - crashRestartedAt)) after PostgreSQL restarted; "
                        + "\(afterCrash.duplicates) duplicate deliveries in all (same ids)")
                #expect(receiver.badSignatures == 0)
                #expect(WebhookReceiver.outOfOrderUsers(receiver.deliveries).isEmpty, "in event order per user")
                // Every acknowledged purchase has its event: one purchase.recorded per purchase row.
                let (purchases, recorded) = try await scenario.cluster.withClient { client in
                    try await client.query(
                        """
                        SELECT (SELECT count(*) FROM purchases),
                               (SELECT count(*) FROM webhook_outbox WHERE type = 'purchase.recorded')
                        """
                    ).single().decode((Int, Int).self)
                }
                #expect(purchases == recorded && purchases >= 300, "\(purchases) purchases, \(recorded) events")
            }
        }
    }

    @Test(
        "two servers on one database deliver each event once",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(5)))
    func twoServers() async throws {
        try await FaultScenario.run("webhooks-two") { scenario in
            let receiver = WebhookReceiver(secret: Self.secret, port: try TestCluster.freePort())
            try await receiver.serving {
                let first = try await scenario.startServer(options: Self.options)
                _ = try await scenario.startServer(options: Self.options)
                try await scenario.cluster.withClient { client in
                    _ = try await WebhookStore(client: client).addEndpoint(
                        url: try WebhookURL(receiver.url, destinations: .publicAndLoopback), events: nil,
                        secret: Self.secret, actor: "fault")
                }
                let load = PurchaseLoad(
                    scenario: "two", workers: FaultSettings.clients(8), baseURL: first.baseURL,
                    requestTimeout: .seconds(10))
                try await load.registerUsers(scenario.http)
                try await Self.purchases(load, scenario, until: 300)
                let drained = try await Self.drain(scenario, receiver)
                #expect(drained.missing.isEmpty)
                #expect(drained.duplicates == 0, "two servers, each event once: \(drained.duplicates) duplicates")
                let attempts = try await scenario.cluster.withClient { client in
                    try await client.query("SELECT count(*) FROM webhook_attempts").single().decode(Int.self, at: 0)
                }
                #expect(attempts == drained.events, "one attempt per event: \(attempts) for \(drained.events)")
                scenario.report("two servers: \(drained.events) events, each delivered once, \(attempts) attempts")
            }
        }
    }

    @Test(
        "without --webhook-allow-loopback, serve refuses to deliver to loopback: the attempt says destination_refused",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(2)))
    func loopbackRefusedByDefault() async throws {
        try await FaultScenario.run("webhooks-refused") { scenario in
            let receiver = WebhookReceiver(secret: Self.secret, port: try TestCluster.freePort())
            try await receiver.serving {
                _ = try await scenario.startServer(options: Self.options.filter { $0 != "--webhook-allow-loopback" })
                // Stored as another server with the opt-in (or an older release) would have stored them.
                try await scenario.cluster.withClient { client in
                    for url in [receiver.url, "http://localhost:\(receiver.port)/hooks"] {
                        try await client.execute(
                            """
                            INSERT INTO webhook_endpoints (url, secret, created_by)
                            VALUES (\(url)::text, \(Self.secret)::text, 'fault')
                            """)
                    }
                    try await client.execute("INSERT INTO users (uid, profile) VALUES ('hooked', '{}')")
                    try await client.execute(
                        """
                        INSERT INTO support_actions (kind, uid, item_kind, item_index, actor, reason)
                        VALUES ('grant', 'hooked', 'face', 1, 'fault', 'a webhook event')
                        """)
                }
                let start = ContinuousClock.now
                var errors: [String?] = []
                while ContinuousClock.now - start < .seconds(60) {
                    errors = try await scenario.cluster.withClient { client in
                        try await client.query("SELECT error FROM webhook_attempts ORDER BY attempt_id").map {
                            try $0.decode(String?.self, at: 0)
                        }
                    }
                    if errors.count >= 4 { break }
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(errors.count >= 4 && errors.allSatisfy { $0 == "destination_refused" }, "\(errors)")
                #expect(receiver.requests == 0, "nothing reached the receiver")
            }
        }
    }

    /// Runs `load` until `count` purchases were acknowledged.
    static func purchases(_ load: PurchaseLoad, _ scenario: FaultScenario, until count: Int) async throws {
        let record = LoadRecord()
        let stop = StopSignal()
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await load.run(scenario.http, until: stop, record: record) }
            try await record.waitUntilAcknowledged(count, since: started)
            stop.set()
            try await group.waitForAll()
        }
    }

    static func waitForDeliveries(_ receiver: WebhookReceiver, atLeast count: Int) async throws {
        let start = ContinuousClock.now
        while receiver.deliveries.count < count {
            guard ContinuousClock.now - start < .seconds(60) else {
                throw FaultTestError("only \(receiver.deliveries.count) of \(count) webhook deliveries arrived")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Waits until every event in the outbox reached the receiver and nothing is queued.
    static func drain(
        _ scenario: FaultScenario, _ receiver: WebhookReceiver
    ) async throws
        -> (events: Int, missing: [String], duplicates: Int)
    {
        let start = ContinuousClock.now
        while true {
            let (ids, pending) = try await scenario.cluster.withClient { client in
                (
                    try await client.query("SELECT event_id FROM webhook_outbox").map {
                        WebhookEvent.publicId(try $0.decode(Int64.self, at: 0))
                    },
                    try await client.query("SELECT count(*) FROM webhook_pending").single().decode(Int.self, at: 0)
                )
            }
            let received = receiver.deliveries.map(\.id)
            let missing = Set(ids).subtracting(received).sorted()
            if (missing.isEmpty && pending == 0) || ContinuousClock.now - start > .seconds(90) {
                #expect(Set(received).isSubset(of: Set(ids)), "nothing arrives that is not in the outbox")
                return (ids.count, missing, received.count - Set(received).count)
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}
