import Foundation
import Ledger
import NIOCore
import NIOHTTP1
import Postgres
import Testing

@Suite("Faults: shopledger serve killed with SIGKILL under a purchase load")
struct ServerKillTests {
    @Test(
        "every purchase acknowledged before SIGKILL is in the ledger exactly once; nothing half-written; after a restart the sweeper applies stored refunds, retries converge and reconcile passes",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(5)))
    func killDuringPurchaseLoad() async throws {
        try await FaultScenario.run("sigkill") { scenario in
            let server = try await scenario.startServer()
            let load = PurchaseLoad(
                scenario: "kill", workers: FaultSettings.clients(12), baseURL: server.baseURL,
                requestTimeout: .seconds(10))
            try await load.registerUsers(scenario.http)
            let record = LoadRecord()
            let stop = StopSignal()
            let refunds = RefundLoad(baseURL: server.baseURL)

            let loadStarted = ContinuousClock.now
            var killedAt = loadStarted
            let notifications = try await withThrowingTaskGroup(of: [NotificationAttempt].self) { group in
                group.addTask {
                    await load.run(scenario.http, until: stop, record: record)
                    return []
                }
                group.addTask { await refunds.run(scenario.http, purchases: record, until: stop) }
                // Strike in the middle of the load, with requests in flight.
                try await record.waitUntilAcknowledged(FaultSettings.acknowledgedBeforeFault, since: loadStarted)
                // The instant before the signal: a request cut off by it ends after this.
                killedAt = .now
                server.kill()
                stop.set()
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(server.child.exit == .signalled(SIGKILL))
            let attempts = record.all
            let acknowledgedBeforeKill = attempts.filter { $0.acknowledged && $0.finished <= killedAt }.count
            #expect(acknowledgedBeforeKill >= FaultSettings.acknowledgedBeforeFault, "the load ran before the kill")
            #expect(
                attempts.allSatisfy { $0.acknowledged || $0.started >= killedAt || $0.finished >= killedAt },
                "before the kill every purchase was acknowledged: \(attempts.filter { !$0.acknowledged && $0.finished < killedAt }.prefix(3).map(\.outcome))"
            )
            let cutOff = attempts.filter { $0.started < killedAt && $0.finished >= killedAt && !$0.acknowledged }.count

            // The database as the killed process left it: nothing acknowledged is missing, nothing is
            // half-written. The one invariant allowed to fail is `notifications_applied`: a refund stored
            // but not yet applied when the process died is the sweeper's job at the next start.
            let afterKill = try await scenario.cluster.withClient { try await LedgerAudit.audit(attempts, client: $0) }
            #expect(afterKill.lost.isEmpty, "acknowledged but missing: \(afterKill.lost.prefix(10))")
            #expect(afterKill.duplicated.isEmpty && afterKill.unknown.isEmpty, "\(afterKill)")
            #expect(
                Set(afterKill.failedChecks).isSubset(of: ["notifications_applied"]), "\(afterKill.reconcilerReport)")
            let acknowledgedRefunds = notifications.filter { $0.outcome.status == 200 }
            let storedRefunds = try await scenario.cluster.withClient { client in
                Set(
                    try await client.query("SELECT notification_uuid FROM store_notifications").map {
                        try $0.decode(String.self, at: 0)
                    })
            }
            #expect(
                acknowledgedRefunds.allSatisfy { storedRefunds.contains($0.uuid) },
                "every acknowledged notification is stored")

            // Restart on the same database: the sweeper applies what was stored but not applied.
            let restarted = try await scenario.startServer()
            let sweepStarted = ContinuousClock.now
            var swept = try await scenario.cluster.withClient { try await Reconciler(client: $0).run() }
            while !swept.passed, ContinuousClock.now - sweepStarted < .seconds(15) {
                try await Task.sleep(for: .milliseconds(100))
                swept = try await scenario.cluster.withClient { try await Reconciler(client: $0).run() }
            }
            let sweepTook = ContinuousClock.now - sweepStarted
            #expect(swept.passed, "after the restart's sweep: \(swept.text)")

            // Clients retry what failed: every retry is answered 200 (recorded now, or found recorded);
            // an acknowledged one posted again is a duplicate, never a second purchase.
            let retries = await PurchaseAttempt.retry(attempts, scenario.http, baseURL: restarted.baseURL)
            #expect(
                retries.allSatisfy { $0.acknowledged },
                "retries: \(retries.filter { !$0.acknowledged }.prefix(5).map(\.outcome))")
            for attempt in attempts.filter({ $0.acknowledged && $0.request.way != .sesacStub }).suffix(5) {
                let answer = try await scenario.http.send(
                    .POST, restarted.baseURL + attempt.request.path, headers: attempt.request.headers,
                    body: attempt.request.body)
                #expect(answer.status == 200 && answer.json["duplicate"] as? Bool == true, "\(answer.body)")
            }
            for notification in notifications where notification.outcome.status != 200 {
                let outcome = await NotificationAttempt.send(
                    notification.body, scenario.http, baseURL: restarted.baseURL)
                #expect(outcome.status == 200, "notification retry: \(outcome)")
            }

            let final = try await scenario.cluster.withClient {
                try await LedgerAudit.audit(attempts + retries, client: $0)
            }
            #expect(final.lost.isEmpty && final.duplicated.isEmpty && final.unknown.isEmpty, "\(final)")
            #expect(final.notRecorded == 0, "after the retries every transaction sent is recorded: \(final)")
            #expect(final.reconcilerPassed, "\(final.reconcilerReport)")
            let binary = try await ServerProcess.reconcile(databaseURL: scenario.cluster.url)
            #expect(binary.passed, "shopledger reconcile: \(binary.output)")

            scenario.report(
                "load \(ms(killedAt - loadStarted)) with \(load.workers) clients; before SIGKILL: \(afterKill); "
                    + "cut off in flight: \(cutOff); refunds sent \(notifications.count), acknowledged \(acknowledgedRefunds.count), "
                    + "left unapplied by the kill: \(afterKill.failedChecks.isEmpty ? "none" : "some"), reconcile passed \(ms(sweepTook)) after the restart; "
                    + "retried \(retries.count) (all 200); after retries: \(final); shopledger reconcile: \(binary.passed ? "exit 0" : "FAILED")"
            )
        }
    }
}
