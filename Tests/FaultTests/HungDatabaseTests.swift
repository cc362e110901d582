import Foundation
import Ledger
import NIOCore
import NIOHTTP1
import Postgres
import Testing

@Suite("Faults: every PostgreSQL process stopped (SIGSTOP) under a purchase load, then continued (SIGCONT)")
struct HungDatabaseTests {
    @Test(
        "while PostgreSQL hangs, requests answer 503 (SeSAC 500) within the request timeout, /readyz 503 within 1 s, SIGTERM exits within the grace period; after SIGCONT the service recovers by itself and nothing acknowledged is lost",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason),
        .timeLimit(.minutes(5)))
    func postgresStoppedUnderLoad() async throws {
        let requestTimeout: Duration = .seconds(3)
        let grace: Duration = .seconds(5)
        let frozenFor: Duration = FaultSettings.all ? .seconds(12) : .seconds(8)
        // The client waits far longer than the server may take, so a wedged server shows as a late answer
        // or a transport timeout, never as a quick one.
        let clientTimeout: TimeAmount = .seconds(20)
        let serverOptions = ["--request-timeout", "3", "--shutdown-grace", "5"]
        try await FaultScenario.run("pg-sigstop") { scenario in
            let server = try await scenario.startServer(options: serverOptions)
            // A second server, to be stopped with SIGTERM while the database hangs.
            let doomed = try await scenario.startServer(options: serverOptions)
            let load = PurchaseLoad(
                scenario: "hung", workers: FaultSettings.clients(12), baseURL: server.baseURL,
                backoffAfterFailure: .milliseconds(50), requestTimeout: clientTimeout)
            try await load.registerUsers(scenario.http)
            let record = LoadRecord()
            let stop = StopSignal()
            let loadStarted = ContinuousClock.now
            var frozenAt = loadStarted
            var thawedAt = loadStarted
            var probes: [TimedProbe] = []
            var myinfo: TimedProbe?
            var termAt = loadStarted
            var doomedExit: Spawned.Termination?
            var doomedExitAfter: Duration = .zero
            var doomedAnswers: [FaultHTTP.Outcome] = []

            func probe(_ path: String, headers: [(String, String)] = []) async -> TimedProbe {
                await TimedProbe.get(
                    server.baseURL + path, headers: headers, timeout: .seconds(10), with: scenario.http)
            }

            do {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { await load.run(scenario.http, until: stop, record: record) }
                    try await record.waitUntilAcknowledged(FaultSettings.acknowledgedBeforeFault, since: loadStarted)
                    try scenario.cluster.freeze()
                    frozenAt = .now

                    // Requests in flight on the doomed server, then SIGTERM while they hang.
                    let doomedRequests = (0..<3).map { index in
                        PurchaseRequest(
                            way: PurchaseRequest.Way.allCases[index], uid: load.uid(index),
                            transactionId: index == 1 ? "8000000000\(index)" : "doomed-\(index)",
                            product: FaultFixtures.products[index])
                    }
                    async let answers = withTaskGroup(of: FaultHTTP.Outcome.self) { requests in
                        for request in doomedRequests {
                            requests.addTask {
                                await request.send(scenario.http, baseURL: doomed.baseURL, timeout: clientTimeout)
                            }
                        }
                        return await requests.reduce(into: [FaultHTTP.Outcome]()) { $0.append($1) }
                    }
                    try await Task.sleep(for: .milliseconds(500))
                    termAt = .now
                    doomed.child.signal(SIGTERM)

                    myinfo = await probe("/v1/user/shop/myinfo", headers: [("idtoken", "dev:\(load.uid(0))")])
                    while ContinuousClock.now - frozenAt < frozenFor {
                        probes.append(await probe("/readyz"))
                        if doomedExit == nil, let exit = doomed.child.exit {
                            doomedExit = exit
                            doomedExitAfter = .now - termAt
                        }
                        try await Task.sleep(for: .milliseconds(200))
                    }
                    if doomedExit == nil {
                        doomedExit = await doomed.child.waitForExit(timeout: .seconds(5))
                        doomedExitAfter = .now - termAt
                    }
                    try scenario.cluster.thaw()
                    thawedAt = .now
                    doomedAnswers = await answers

                    let acknowledgedAtThaw = record.acknowledgedCount
                    while ContinuousClock.now - thawedAt < .seconds(2)
                        || record.acknowledgedCount < acknowledgedAtThaw + 50,
                        ContinuousClock.now - thawedAt < .seconds(60)
                    {
                        probes.append(await probe("/readyz"))
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    stop.set()
                    try await group.waitForAll()
                }
            } catch {
                _ = try? scenario.cluster.thaw()
                throw error
            }

            let attempts = record.all
            let before = attempts.filter { $0.finished < frozenAt }
            // Every purchase sent while the database hung, whenever its answer came.
            let sentWhileFrozen = attempts.filter { $0.started >= frozenAt && $0.started < thawedAt }
            let answeredWhileFrozen = sentWhileFrozen.filter { $0.finished < thawedAt }
            let bound = requestTimeout + .milliseconds(300)

            #expect(
                before.allSatisfy { $0.acknowledged },
                "before the freeze: \(before.filter { !$0.acknowledged }.prefix(3).map(\.outcome))")
            #expect(
                answeredWhileFrozen.count >= 4,
                "the load kept asking while the database hung (\(answeredWhileFrozen.count) answers)")
            // Answered before SIGCONT: refused. (One still in flight at SIGCONT may be recorded.)
            let wrong = answeredWhileFrozen.filter { $0.outcome.status != $0.request.unavailableStatus }
            #expect(
                wrong.isEmpty,
                "while hung: JSON 503, SeSAC 500: \(wrong.prefix(5).map { "\($0.request.way) \($0.outcome) after \(ms($0.latency))" })"
            )
            let slow = sentWhileFrozen.filter { $0.latency > bound }
            #expect(
                slow.isEmpty,
                "answered within the \(ms(requestTimeout)) request timeout: \(slow.prefix(5).map { "\($0.request.way) \(ms($0.latency))" })"
            )
            let firstUnavailable = attempts.filter { $0.finished >= frozenAt && !$0.acknowledged }.map(\.finished).min()
            let timeToFirst503 = firstUnavailable.map { $0 - frozenAt }

            #expect(
                myinfo?.outcome.status == 500 && (myinfo?.latency ?? .seconds(99)) < bound,
                "GET /v1/user/shop/myinfo while hung: \(myinfo.map { "\($0.outcome) after \(ms($0.latency))" } ?? "none")"
            )
            let readyWhileFrozen = probes.filter { $0.at >= frozenAt && $0.at < thawedAt }
            #expect(
                !readyWhileFrozen.isEmpty
                    && readyWhileFrozen.allSatisfy { $0.outcome.status == 503 && $0.latency < .seconds(1) },
                "/readyz while hung: \(readyWhileFrozen.map { "\($0.outcome) \(ms($0.latency))" })")

            #expect(
                doomedExit != nil && doomedExitAfter < grace,
                "SIGTERM with the database hung: exit \(doomedExit.map(\.description) ?? "none") after \(ms(doomedExitAfter)), grace \(ms(grace))\n\(doomed.child.logTail(10))"
            )
            #expect(
                doomedAnswers.allSatisfy { $0.status == 503 || $0.status == 500 },
                "the doomed server's in-flight requests: \(doomedAnswers)")

            let afterThaw = attempts.filter { $0.started >= thawedAt }
            let firstSuccess = afterThaw.filter(\.acknowledged).map(\.finished).min()
            let lastFailure = afterThaw.filter { !$0.acknowledged }.map(\.finished).max()
            let recovered = [firstSuccess, lastFailure].compactMap { $0 }.max().map { $0 - thawedAt }
            #expect(
                firstSuccess != nil && recovered.map { $0 < .seconds(10) } == true,
                "recovery: \(recovered.map(ms) ?? "never")")
            let firstReady = probes.first { $0.at >= thawedAt && $0.outcome.status == 200 }
            #expect(firstReady != nil, "/readyz says 200 again")

            let audit = try await scenario.cluster.withClient { try await LedgerAudit.audit(attempts, client: $0) }
            #expect(audit.lost.isEmpty, "acknowledged but missing: \(audit.lost.prefix(10))")
            #expect(audit.duplicated.isEmpty && audit.unknown.isEmpty, "\(audit)")
            #expect(audit.reconcilerPassed, "\(audit.reconcilerReport)")
            let binary = try await ServerProcess.reconcile(databaseURL: scenario.cluster.url)
            #expect(binary.passed, "shopledger reconcile: \(binary.output)")

            let statuses = Dictionary(grouping: answeredWhileFrozen, by: { "\($0.request.way) \($0.outcome)" })
                .mapValues(\.count)
            scenario.report(
                "frozen \(ms(thawedAt - frozenAt)) (request timeout \(ms(requestTimeout))); first 503 \(timeToFirst503.map(ms) ?? "never") after SIGSTOP; "
                    + "requests answered while hung: \(statuses.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }.joined(separator: ", ")); "
                    + "latency while hung: \(LatencySummary(sentWhileFrozen.map(\.latency))); myinfo \(myinfo.map { "\($0.outcome) in \(ms($0.latency))" } ?? "none"); "
                    + "/readyz while hung: \(readyWhileFrozen.count) probes, max \(ms(readyWhileFrozen.map(\.latency).max() ?? .zero)); "
                    + "SIGTERM with the database hung: exit \(doomedExit.map(\.description) ?? "none") \(ms(doomedExitAfter)) after (grace \(ms(grace))); "
                    + "after SIGCONT: first /readyz 200 \(firstReady.map { ms($0.at - thawedAt) } ?? "never"), purchases recovered \(recovered.map(ms) ?? "never"); "
                    + "\(audit); shopledger reconcile: \(binary.passed ? "exit 0" : "FAILED")")
        }
    }
}
