import Foundation
import Ledger
import NIOCore
import Postgres
import Testing

@Suite("Faults: graceful shutdown (SIGTERM) of shopledger serve under load")
struct GracefulShutdownTests {
    @Test(
        "SIGTERM under load: in-flight requests complete with 200, new connections are refused, the process exits 0 well within the grace period",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(5)))
    func sigtermUnderLoad() async throws {
        let grace: Duration = .seconds(8)
        try await FaultScenario.run("sigterm") { scenario in
            let server = try await scenario.startServer(options: ["--shutdown-grace", "8", "--request-timeout", "30"])
            let load = PurchaseLoad(
                scenario: "term", workers: FaultSettings.clients(8), baseURL: server.baseURL,
                requestTimeout: .seconds(30))
            try await load.registerUsers(scenario.http)
            let slowUploads = PurchaseRequest.Way.allCases.enumerated().map { index, way in
                SlowUpload(
                    PurchaseRequest(
                        way: way, uid: load.uid(index), transactionId: "9\(index)00000000\(index)",
                        product: FaultFixtures.products[index]))
            }
            let record = LoadRecord()
            let stop = StopSignal()
            let loadStarted = ContinuousClock.now
            var termAt = loadStarted
            var refusedAt: ContinuousClock.Instant?
            var runningWhileInFlight = false

            let slowResults = try await withThrowingTaskGroup(
                of: (PurchaseRequest, FaultHTTP.Outcome, ContinuousClock.Instant)?.self
            ) { group in
                group.addTask {
                    await load.run(scenario.http, until: stop, record: record)
                    return nil
                }
                for upload in slowUploads {
                    group.addTask {
                        let (outcome, at) = await upload.send(scenario.http, baseURL: server.baseURL)
                        return (upload.request, outcome, at)
                    }
                }
                // Load running, slow uploads half sent (their heads long arrived).
                try await Task.sleep(for: .seconds(1))
                try await record.waitUntilAcknowledged(FaultSettings.acknowledgedBeforeFault / 2, since: loadStarted)
                termAt = .now
                server.child.signal(SIGTERM)
                while ContinuousClock.now - termAt < .seconds(3) {
                    if !acceptsConnections(port: server.port) {
                        refusedAt = .now
                        break
                    }
                    try await Task.sleep(for: .milliseconds(5))
                }
                stop.set()
                // The slow requests are still in flight: the process must wait for them.
                try await Task.sleep(for: .seconds(1))
                runningWhileInFlight = server.child.exit == nil && !acceptsConnections(port: server.port)
                for upload in slowUploads { upload.finish() }
                var results: [(PurchaseRequest, FaultHTTP.Outcome, ContinuousClock.Instant)] = []
                for try await result in group { if let result { results.append(result) } }
                return results
            }
            let exit = await server.child.waitForExit(timeout: grace + .seconds(10))
            let exitedAt = ContinuousClock.now
            let exitedAfter = exitedAt - termAt

            #expect(refusedAt != nil, "new connections are refused after SIGTERM")
            #expect(
                runningWhileInFlight,
                "the process waits for the in-flight requests and accepts no new connection meanwhile")
            #expect(
                slowResults.count == slowUploads.count && slowResults.allSatisfy { $0.1.status == 200 },
                "in-flight requests complete: \(slowResults.map { "\($0.0.way) \($0.1)" })")
            #expect(
                exit == .exited(0), "exit: \(exit.map(\.description) ?? "still running")\n\(server.child.logTail())")
            #expect(exitedAfter < grace, "exited \(ms(exitedAfter)) after SIGTERM; the grace period is \(ms(grace))")
            let lastSlowAnswer = slowResults.map(\.2).max() ?? termAt
            let attempts = record.all
            let statuses = Dictionary(
                grouping: attempts.filter { $0.finished >= termAt },
                by: { $0.outcome.status.map(String.init) ?? "transport error" }
            ).mapValues(\.count)
            #expect(
                attempts.allSatisfy { $0.acknowledged || $0.outcome.status == nil },
                "no request is answered with an error during shutdown: \(statuses)")

            let slowAttempts = slowResults.map {
                PurchaseAttempt(request: $0.0, started: loadStarted, finished: $0.2, outcome: $0.1)
            }
            let audit = try await scenario.cluster.withClient {
                try await LedgerAudit.audit(attempts + slowAttempts, client: $0)
            }
            #expect(audit.lost.isEmpty && audit.duplicated.isEmpty && audit.unknown.isEmpty, "\(audit)")
            #expect(audit.recordedThoughFailed == 0, "a request refused during shutdown wrote nothing: \(audit)")
            #expect(audit.reconcilerPassed, "\(audit.reconcilerReport)")

            scenario.report(
                "SIGTERM after \(record.all.filter { $0.finished < termAt && $0.acknowledged }.count) acknowledged purchases; new connections refused \(refusedAt.map { ms($0 - termAt) } ?? "never") after SIGTERM; "
                    + "\(slowResults.count) slow in-flight uploads finished 1 s later: \(slowResults.map { "\($0.1)" }.joined(separator: ", ")); "
                    + "load after SIGTERM: \(statuses); exit \(exit.map(\.description) ?? "none") \(ms(exitedAfter)) after SIGTERM (\(ms(exitedAt - lastSlowAnswer)) after the last in-flight answer; grace \(ms(grace))); \(audit)"
            )
        }
    }

    @Test(
        "a request that never completes does not hold the process beyond the grace period",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason),
        .timeLimit(.minutes(3)))
    func gracePeriodBoundsShutdown() async throws {
        let grace: Duration = .seconds(2)
        try await FaultScenario.run("sigterm-stuck") { scenario in
            let server = try await scenario.startServer(options: ["--shutdown-grace", "2", "--request-timeout", "60"])
            let load = PurchaseLoad(scenario: "stuck", workers: 1, baseURL: server.baseURL)
            try await load.registerUsers(scenario.http)
            let stuck = SlowUpload(
                PurchaseRequest(
                    way: .jsonStub, uid: load.uid(0), transactionId: "stuck-1", product: FaultFixtures.products[0]))
            var termAt = ContinuousClock.now
            let (outcome, exit) = try await withThrowingTaskGroup(of: FaultHTTP.Outcome.self) { group in
                group.addTask { await stuck.send(scenario.http, baseURL: server.baseURL).0 }
                try await Task.sleep(for: .seconds(1))
                termAt = .now
                server.child.signal(SIGTERM)
                let exit = await server.child.waitForExit(timeout: grace + .seconds(10))
                stuck.abandon()
                return (try await group.next()!, exit)
            }
            let exitedAfter = ContinuousClock.now - termAt
            #expect(exit != nil, "the process exits")
            #expect(
                exitedAfter < grace + .seconds(3),
                "exited \(ms(exitedAfter)) after SIGTERM with a stuck request; grace \(ms(grace))")
            #expect(outcome.status != 200)
            let recorded = try await scenario.cluster.withClient {
                try await $0.query("SELECT count(*) FROM purchases").single().decode(Int.self, at: 0)
            }
            #expect(recorded == 0, "the cut-off request wrote nothing")
            scenario.report(
                "stuck request: \(outcome); exit \(exit.map(\.description) ?? "none") \(ms(exitedAfter)) after SIGTERM (grace \(ms(grace)))"
            )
        }
    }
}
