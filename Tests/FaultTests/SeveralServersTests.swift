import Foundation
import Ledger
import NIOCore
import NIOHTTP1
import Postgres
import Testing

/// Several `shopledger serve` processes on one database behind HAProxy: what runs in every instance
/// (migrations at start, the notification sweeper) must be safe when N of them run it at once.
@Suite("Faults: several shopledger serve processes on one database, behind HAProxy")
struct SeveralServersTests {
    @Test(
        "two servers migrate one empty database at once, share a purchase load through HAProxy with nothing lost or doubled, and their sweepers racing on the same stored refunds apply each exactly once",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(5)))
    func twoServersBehindHAProxy() async throws {
        try await FaultScenario.run("several-servers") { scenario in
            // Sweeping every 50 ms, the two sweepers work on the same stored notifications at the same time.
            let options = ["--notification-sweep-interval", "0.05"]
            // Both start on an empty database, so both run every migration: the advisory lock serialises them.
            async let first = scenario.startServer(options: options)
            async let second = scenario.startServer(options: options)
            let servers = try await [first, second]
            let applied = try await scenario.cluster.withClient { client in
                try await client.query("SELECT version, count(*) FROM schema_migrations GROUP BY version").map {
                    try $0.decode((Int, Int).self)
                }
            }
            let migrationFiles = try Self.migrationCount()
            #expect(applied.count == migrationFiles, "migrations applied: \(applied), files: \(migrationFiles)")
            #expect(applied.allSatisfy { $0.1 == 1 }, "a migration recorded twice: \(applied)")

            let balancer = try await scenario.startLoadBalancer(inFrontOf: servers)
            let load = PurchaseLoad(
                scenario: "several", workers: FaultSettings.clients(12), baseURL: balancer.baseURL,
                requestTimeout: .seconds(10))
            try await load.registerUsers(scenario.http)
            let record = LoadRecord()
            let stop = StopSignal()
            let loadStarted = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await load.run(scenario.http, until: stop, record: record) }
                try await record.waitUntilAcknowledged(FaultSettings.acknowledgedBeforeFault, since: loadStarted)
                stop.set()
                try await group.waitForAll()
            }
            let loadTook = ContinuousClock.now - loadStarted
            let attempts = record.all
            let failed = attempts.filter { !$0.acknowledged }
            #expect(
                failed.isEmpty, "through HAProxy every purchase is acknowledged: \(failed.prefix(3).map(\.outcome))")
            var recordedBy: [Int] = []
            for server in servers { recordedBy.append(try await Self.recordedPurchases(server, http: scenario.http)) }
            #expect(recordedBy.allSatisfy { $0 > 0 }, "both servers recorded purchases: \(recordedBy)")
            let audit = try await scenario.cluster.withClient { try await LedgerAudit.audit(attempts, client: $0) }
            #expect(audit.lost.isEmpty && audit.duplicated.isEmpty && audit.unknown.isEmpty, "\(audit)")
            #expect(audit.reconcilerPassed, "\(audit.reconcilerReport)")

            // Refunds stored but not applied (as a process that died between the two steps leaves them),
            // all at once: both sweepers find the same list and apply it side by side.
            let stored = try await scenario.cluster.withClient { client in
                try await client.query(
                    """
                    INSERT INTO store_notifications (notification_uuid, store, environment, notification_type,
                        signed_at, transaction_id, refund_kind, evidence_sha256, signed_payload)
                    SELECT 'several-' || p.transaction_id, p.store, p.environment, 'REFUND', now(), p.transaction_id,
                        'refund', sha256(convert_to(p.transaction_id, 'UTF8')), 'stored by SeveralServersTests'
                    FROM purchases p
                    """
                ).affectedRows ?? 0
            }
            #expect(stored == audit.acknowledged, "one refund per purchase stored")
            let sweepStarted = ContinuousClock.now
            var pending = stored
            while pending > 0, ContinuousClock.now - sweepStarted < .seconds(60) {
                try await Task.sleep(for: .milliseconds(50))
                pending = try await scenario.cluster.withClient { client in
                    try await client.query(
                        """
                        SELECT count(*) FROM store_notifications n WHERE n.refund_kind IS NOT NULL
                          AND NOT EXISTS (SELECT 1 FROM refund_events e WHERE e.source_event_id = n.notification_uuid)
                        """
                    ).single().decode(Int.self, at: 0)
                }
            }
            let sweepTook = ContinuousClock.now - sweepStarted
            #expect(pending == 0, "the sweepers left \(pending) stored refunds unapplied")
            let (events, entries, doubled) = try await scenario.cluster.withClient { client in
                try await client.query(
                    """
                    SELECT (SELECT count(*) FROM refund_events WHERE source_event_id LIKE 'several-%'),
                           (SELECT count(*) FROM journal_entries WHERE kind = 'refund'),
                           (SELECT count(*) FROM (SELECT refund_event_id FROM journal_entries
                                WHERE refund_event_id IS NOT NULL GROUP BY refund_event_id HAVING count(*) > 1) d)
                    """
                ).single().decode((Int, Int, Int).self)
            }
            #expect(
                events == stored && entries == stored && doubled == 0, "events \(events), refund entries \(entries)")
            let reconciled = try await ServerProcess.reconcile(databaseURL: scenario.cluster.url)
            #expect(reconciled.passed, "shopledger reconcile: \(reconciled.output)")
            // Each sweeper logs how many it applied; a notification the other had applied first counts
            // again (answered as a duplicate), so a sum above the stored count shows they overlapped.
            let sweptTotal = Self.sweptCount(logPath: scenario.folder + "/server.log")

            scenario.report(
                "2 servers behind HAProxy, \(load.workers) clients for \(ms(loadTook)): \(audit); "
                    + "recorded per server \(recordedBy); migrations \(applied.count) applied once each by 2 concurrent starts; "
                    + "\(stored) stored refunds swept by 2 sweepers in \(ms(sweepTook)): \(events) refund events, "
                    + "\(entries) refund entries, \(doubled) doubled; sweeps reported \(sweptTotal) applications "
                    + "(above \(stored): the same one applied by both, the second a no-op); "
                    + "shopledger reconcile: \(reconciled.passed ? "exit 0" : "FAILED")")
        }
    }

    /// The numbered migrations in this checkout's sql/migrations.
    static func migrationCount() throws -> Int {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("sql/migrations").path
        return try FileManager.default.contentsOfDirectory(atPath: folder).filter {
            $0.hasSuffix(".sql") && $0.first?.isNumber == true
        }.count
    }

    /// `shop_purchases_total{outcome="recorded"}` from one server's /metrics.
    static func recordedPurchases(_ server: ServerProcess, http: FaultHTTP) async throws -> Int {
        let answer = try await http.send(.GET, server.baseURL + "/metrics")
        let line = answer.body.split(separator: "\n").first {
            $0.hasPrefix("shop_purchases_total{") && $0.contains("outcome=\"recorded\"")
        }
        return line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }.map { Int($0) } ?? 0
    }

    /// The sum of `count` over the "applied stored notifications" lines of the servers' log.
    static func sweptCount(logPath: String) -> Int {
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return log.split(separator: "\n").filter { $0.contains("applied stored notifications") }.compactMap { line in
            line.firstRange(of: "count=").flatMap { range in
                Int(line[range.upperBound...].prefix { $0.isNumber })
            }
        }.reduce(0, +)
    }
}
