import Foundation
import Ledger
import NIOCore
import Postgres
import Testing

/// A primary with a synchronous standby; `shopledger serve` connected to both through one multi-host
/// conninfo (`target_session_attrs=read-write`). Promotion is the operator's step here (`pg_ctl
/// promote`, what Patroni would do); reconnecting to whichever host accepts writes is the server's.
@Suite("Faults: failover to a synchronous standby")
struct FailoverTests {
    @Test(
        "primary SIGKILLed under a purchase load and the standby promoted: the server reconnects by itself, no acknowledged purchase is lost, reconcile passes on the new primary",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(5)))
    func primaryKilled() async throws {
        try await FaultScenario.run("failover") { scenario in
            let pair = try await ReplicatedCluster.start(primary: scenario.cluster, folder: scenario.folder)
            defer { pair.removeSocketFolder() }
            let server = try await scenario.startServer(
                databaseURL: pair.multiHostURL, options: ["--request-timeout", "5"])
            let load = PurchaseLoad(
                scenario: "failover", workers: FaultSettings.clients(8), baseURL: server.baseURL,
                requestTimeout: .seconds(10))
            try await load.registerUsers(scenario.http)
            let record = LoadRecord()
            let stop = StopSignal()

            let loadStarted = ContinuousClock.now
            var killedAt = loadStarted
            var goneAt = loadStarted
            var promoted = loadStarted
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await load.run(scenario.http, until: stop, record: record) }
                try await record.waitUntilAcknowledged(FaultSettings.acknowledgedBeforeFault, since: loadStarted)
                killedAt = .now
                try scenario.cluster.killEveryProcess()
                // Signals land asynchronously: gone once its port refuses connections. A purchase
                // acknowledged before then may have been committed by the dying primary.
                let port = scenario.cluster.local.options.port
                while acceptsConnections(port: port), ContinuousClock.now - killedAt < .seconds(5) {
                    try await Task.sleep(for: .milliseconds(1))
                }
                goneAt = .now
                #expect(!acceptsConnections(port: port), "the primary still accepts connections 5 s after SIGKILL")
                try await pair.promoteStandby()
                promoted = .now
                // The load goes on until purchases are acknowledged again (by the new primary), a little longer.
                while !record.all.contains(where: { $0.acknowledged && $0.started > goneAt }),
                    ContinuousClock.now - killedAt < .seconds(60)
                {
                    try await Task.sleep(for: .milliseconds(10))
                }
                try await Task.sleep(for: .milliseconds(500))
                stop.set()
                try await group.waitForAll()
            }
            let attempts = record.all
            let firstAfter = attempts.filter { $0.acknowledged && $0.started > goneAt }.map(\.finished).min()
            let recovered = try #require(firstAfter, "no purchase was acknowledged within 60 s of the kill")
            let acknowledgedAfter = attempts.filter { $0.acknowledged && $0.started > goneAt }.count
            let failedBetween = attempts.filter { !$0.acknowledged }.count

            let audit = try await pair.withStandbyClient { try await LedgerAudit.audit(attempts, client: $0) }
            #expect(audit.lost.isEmpty, "acknowledged but missing on the new primary: \(audit.lost.prefix(10))")
            #expect(audit.duplicated.isEmpty && audit.unknown.isEmpty, "\(audit)")
            #expect(audit.reconcilerPassed, "\(audit.reconcilerReport)")
            let binary = try await ServerProcess.reconcile(databaseURL: pair.standbyURL)
            #expect(binary.passed, "shopledger reconcile on the new primary: \(binary.output)")

            scenario.report(
                "\(load.workers) clients, SIGKILL of the primary after \(ms(killedAt - loadStarted)); "
                    + "its port refused connections \(ms(goneAt - killedAt)) after; pg_ctl promote returned \(ms(promoted - goneAt)) "
                    + "later; the first purchase sent after the primary was gone was acknowledged (by the new primary) "
                    + "\(ms(recovered - killedAt)) after the kill; \(failedBetween) purchases failed meanwhile (clients retry), "
                    + "\(acknowledgedAfter) acknowledged after; on the new primary: \(audit); "
                    + "shopledger reconcile: \(binary.passed ? "exit 0" : "FAILED")")
        }
    }

    @Test(
        "the synchronous standby killed: purchases answer within the request timeout with an error instead of hanging; once the standby is taken off synchronous_standby_names they succeed, and retries converge",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(5)))
    func standbyKilled() async throws {
        try await FaultScenario.run("standby-killed") { scenario in
            let pair = try await ReplicatedCluster.start(primary: scenario.cluster, folder: scenario.folder)
            defer { pair.removeSocketFolder() }
            let requestTimeout = Duration.seconds(3)
            let server = try await scenario.startServer(
                databaseURL: pair.multiHostURL, options: ["--request-timeout", "3"])
            let load = PurchaseLoad(
                scenario: "standby-killed", workers: FaultSettings.clients(4), baseURL: server.baseURL,
                requestTimeout: .seconds(30))
            try await load.registerUsers(scenario.http)
            let record = LoadRecord()
            let stop = StopSignal()

            let loadStarted = ContinuousClock.now
            var killedAt = loadStarted
            var released = loadStarted
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await load.run(scenario.http, until: stop, record: record) }
                try await record.waitUntilAcknowledged(FaultSettings.acknowledgedBeforeFault / 3, since: loadStarted)
                killedAt = .now
                try pair.killStandby()
                // Long enough for every client to hit the wait at least twice.
                try await Task.sleep(for: requestTimeout * 3)
                // The operator's (or Patroni's) step: the primary stops waiting for the lost standby.
                released = .now
                try await pair.setSynchronous(false)
                while !record.all.contains(where: { $0.acknowledged && $0.started > released }),
                    ContinuousClock.now - released < .seconds(30)
                {
                    try await Task.sleep(for: .milliseconds(10))
                }
                stop.set()
                try await group.waitForAll()
            }
            let attempts = record.all
            // Sent while the primary waited for the dead standby, early enough to be answered before
            // the release: each answered with an error, by the request timeout and the cancelling of
            // the wait, never by the standby's return. The slack is what cancelling took beside the
            // other fault scenarios on 2 cores (up to 2.1 s seen; 9 s would be waiting for the release).
            let slack = Duration.seconds(3)
            let whileDown = attempts.filter {
                $0.started > killedAt + .milliseconds(100) && $0.started < released - requestTimeout - slack
            }
            #expect(!whileDown.isEmpty, "purchases were sent while the standby was down")
            let wrong = whileDown.filter {
                $0.acknowledged || $0.finished >= released || $0.latency >= requestTimeout + slack
            }
            #expect(
                wrong.isEmpty,
                "while the standby was down: \(wrong.map { "\($0.request.way) \($0.outcome) after \(ms($0.latency)), started \(ms($0.started - killedAt)) after the kill, answered \(ms($0.finished - released)) after the release" })"
            )
            let firstAfter = attempts.filter { $0.acknowledged && $0.started > released }.map(\.finished).min()
            let recovered = try #require(
                firstAfter, "no purchase acknowledged after the standby was taken off the list")

            // Clients retry what failed: each is answered 200 (recorded now, or found recorded: the
            // cancelled wait left the commit in place on the primary).
            let retries = await PurchaseAttempt.retry(attempts, scenario.http, baseURL: server.baseURL)
            #expect(
                retries.allSatisfy { $0.acknowledged },
                "\(retries.filter { !$0.acknowledged }.prefix(5).map(\.outcome))")
            let audit = try await scenario.cluster.withClient {
                try await LedgerAudit.audit(attempts + retries, client: $0)
            }
            #expect(audit.lost.isEmpty && audit.duplicated.isEmpty && audit.unknown.isEmpty, "\(audit)")
            #expect(audit.reconcilerPassed, "\(audit.reconcilerReport)")
            let beforeRetry = try await scenario.cluster.withClient {
                try await LedgerAudit.audit(attempts, client: $0)
            }

            scenario.report(
                "\(load.workers) clients, sync standby SIGKILLed after \(ms(killedAt - loadStarted)); "
                    + "while it was down: \(whileDown.count) purchases answered with an error "
                    + "(\(Set(whileDown.map { "\($0.outcome)" }).sorted().joined(separator: ", "))), "
                    + "\(LatencySummary(whileDown.map(\.latency))), \(beforeRetry.recordedThoughFailed) of all failed ones committed on the primary anyway "
                    + "(the cancelled wait for the standby); first purchase acknowledged \(ms(recovered - released)) after "
                    + "synchronous_standby_names was reset; retried \(retries.count) (all 200); after retries: \(audit)"
            )
        }
    }
}
