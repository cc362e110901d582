import Foundation
import Ledger
import NIOCore
import NIOHTTP1
import Postgres
import Testing

@Suite("Faults: PostgreSQL crashed (pg_ctl stop -m immediate) and restarted under a purchase load")
struct DatabaseOutageTests {
    @Test(
        "while PostgreSQL is down requests fail fast (JSON 503 database_unavailable, SeSAC 500, /readyz 503); the service recovers by itself within seconds; nothing acknowledged is lost",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason),
        .timeLimit(.minutes(5)))
    func postgresCrashUnderLoad() async throws {
        let downFor: Duration = FaultSettings.all ? .seconds(4) : .seconds(2)
        let requestTimeout = 10
        try await FaultScenario.run("pg-crash") { scenario in
            let server = try await scenario.startServer(options: ["--request-timeout", String(requestTimeout)])
            let load = PurchaseLoad(
                scenario: "outage", workers: 12, baseURL: server.baseURL, backoffAfterFailure: .milliseconds(50),
                requestTimeout: .seconds(Int64(requestTimeout * 3)))
            try await load.registerUsers(scenario.http)
            let record = LoadRecord()
            let stop = StopSignal()
            let loadStarted = ContinuousClock.now
            var stopIssued = loadStarted
            var down = loadStarted
            var restartIssued = loadStarted
            var up = loadStarted
            var probes: [TimedProbe] = []

            func probe() async -> TimedProbe {
                await TimedProbe.get(server.baseURL + "/readyz", timeout: .seconds(30), with: scenario.http)
            }

            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await load.run(scenario.http, until: stop, record: record) }
                try await record.waitUntilAcknowledged(FaultSettings.acknowledgedBeforeFault, since: loadStarted)
                stopIssued = .now
                try await scenario.cluster.stopImmediately()
                down = .now
                while ContinuousClock.now - down < downFor {
                    probes.append(await probe())
                    try await Task.sleep(for: .milliseconds(100))
                }
                restartIssued = .now
                try await scenario.cluster.restart()
                up = .now
                // Keep the load going until the service has shown it is back for a while.
                let acknowledgedAtRestart = record.acknowledgedCount
                while ContinuousClock.now - up < .seconds(2) || record.acknowledgedCount < acknowledgedAtRestart + 100,
                    ContinuousClock.now - up < .seconds(60)
                {
                    probes.append(await probe())
                    try await Task.sleep(for: .milliseconds(100))
                }
                stop.set()
                try await group.waitForAll()
            }

            let attempts = record.all
            let before = attempts.filter { $0.finished < stopIssued }
            let whileDown = attempts.filter { $0.started >= down && $0.finished < restartIssued }
            let afterUp = attempts.filter { $0.started >= up }
            let transportErrors = attempts.filter { $0.outcome.status == nil }

            #expect(transportErrors.isEmpty, "the server stays up: \(transportErrors.prefix(3).map(\.outcome))")
            #expect(
                before.allSatisfy { $0.acknowledged },
                "before the crash: \(before.filter { !$0.acknowledged }.prefix(3).map(\.outcome))")
            #expect(whileDown.count >= 20, "the load kept asking while the database was down (\(whileDown.count))")
            let wrongDown = whileDown.filter { attempt in
                attempt.outcome.status != attempt.request.unavailableStatus
                    || (attempt.request.way != .sesacStub && attempt.outcome.code != "database_unavailable")
            }
            #expect(
                wrongDown.isEmpty,
                "while down: JSON 503 database_unavailable, SeSAC 500: \(wrongDown.prefix(5).map { "\($0.request.way) \($0.outcome)" })"
            )
            let downLatency = LatencySummary(whileDown.map(\.latency))
            let healthyLatency = LatencySummary(before.map(\.latency))
            // Fail fast: an answer in well under a second, nowhere near the request timeout.
            #expect(downLatency.max < .seconds(2), "latency while down: \(downLatency)")

            let probesDown = probes.filter { $0.at >= down && $0.at < restartIssued }
            #expect(
                !probesDown.isEmpty && probesDown.allSatisfy { $0.outcome.status == 503 && $0.latency < .seconds(2) },
                "/readyz while down: \(probesDown.map(\.outcome))")
            let firstReady = probes.first { $0.at >= up && $0.outcome.status == 200 }
            #expect(firstReady != nil, "/readyz says 200 again")
            #expect(
                probes.filter { $0.at >= up }.drop(while: { $0.outcome.status != 200 }).allSatisfy {
                    $0.outcome.status == 200
                }, "and stays 200")

            // Recovered: from PostgreSQL accepting connections again, how long until purchases succeed
            // and nothing fails any more.
            let firstSuccess = afterUp.filter(\.acknowledged).map(\.finished).min()
            let lastFailure = afterUp.filter { !$0.acknowledged }.map(\.finished).max()
            let recovered = [firstSuccess, lastFailure].compactMap { $0 }.max().map { $0 - up }
            #expect(
                firstSuccess != nil && recovered.map { $0 < .seconds(5) } == true,
                "recovery: \(recovered.map(ms) ?? "never")")

            let audit = try await scenario.cluster.withClient { try await LedgerAudit.audit(attempts, client: $0) }
            #expect(audit.lost.isEmpty, "acknowledged but missing: \(audit.lost.prefix(10))")
            #expect(audit.duplicated.isEmpty && audit.unknown.isEmpty, "\(audit)")
            #expect(audit.reconcilerPassed, "\(audit.reconcilerReport)")
            let binary = try await ServerProcess.reconcile(databaseURL: scenario.cluster.url)
            #expect(binary.passed, "shopledger reconcile: \(binary.output)")

            let statuses = Dictionary(grouping: whileDown, by: { "\($0.request.way) \($0.outcome)" }).mapValues(\.count)
            scenario.report(
                "down \(ms(restartIssued - down)) (pg_ctl stop -m immediate took \(ms(down - stopIssued)), restart with crash recovery \(ms(up - restartIssued))); "
                    + "requests while down: \(statuses.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }.joined(separator: ", ")); "
                    + "latency while down: \(downLatency) (before the crash, under the same load: \(healthyLatency)); /readyz while down: \(probesDown.count) probes, all 503, max \(ms(probesDown.map(\.latency).max() ?? .zero)); "
                    + "first /readyz 200 \(firstReady.map { ms($0.at - up) } ?? "never") after restart; purchases recovered \(recovered.map(ms) ?? "never") after restart; "
                    + "\(audit); shopledger reconcile: \(binary.passed ? "exit 0" : "FAILED")")
        }
    }
}
