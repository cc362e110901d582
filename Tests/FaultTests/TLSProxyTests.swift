import Foundation
import NIOCore
import NIOHTTP1
import TestSupport
import Testing

/// nginx terminating TLS in front of two `shopledger serve` processes, with the directives of
/// deploy/nginx/shopledger.conf: purchases over HTTPS, one server killed mid-load, and the servers
/// told who the client is (X-Forwarded-For from the trusted proxy) and nobody else.
@Suite("Faults: nginx terminating TLS in front of two shopledger serve processes")
struct TLSProxyTests {
    @Test(
        "purchases over HTTPS through nginx survive SIGKILL of one server with nothing lost or doubled, and the servers log the client's address, not nginx's",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(5)))
    func killOneServerBehindNginx() async throws {
        try await FaultScenario.run("tls-proxy") { scenario in
            // nginx connects to the servers from 127.0.0.1; the test client reaches nginx on [::1], so the
            // address each server logs says which one it took for the client.
            // (The load signs in with development tokens and buys with stub receipts, which behind a proxy
            // need --allow-development-on-public-address.)
            let options = ["--trusted-proxy", "127.0.0.1", "--allow-development-on-public-address"]
            async let first = scenario.startServer(options: options, logLevel: "info")
            async let second = scenario.startServer(options: options, logLevel: "info")
            let servers = try await [first, second]
            let (certificate, key) = try await TLSProxy.makeCertificate(in: scenario.folder)
            try await FaultHTTP.with(trustingOnly: certificate) { https in
                // The load comes from one address (::1): nginx's per-address limits are lifted out of its
                // way (shippedEdge below runs them as shipped).
                let proxy = try await scenario.startTLSProxy(
                    inFrontOf: servers, httpPort: try TestCluster.freePort(), certificate: certificate, key: key,
                    limits: .lifted, https: https)
                // A client's own X-Forwarded-For is overwritten by nginx (set, not appended).
                let spoofed = try await https.send(
                    .GET, proxy.baseURL + "/api/v1/catalog", headers: [("X-Forwarded-For", "203.0.113.66")])
                #expect(spoofed.status == 200)
                // Plain HTTP on the TLS port is refused by nginx (400), never passed on.
                let plain = await scenario.http.outcome(.GET, "http://[::1]:\(proxy.port)/readyz")
                #expect(plain.0.status == 400, "plain HTTP to the TLS port: \(plain.0)")

                let load = PurchaseLoad(
                    scenario: "tls", workers: FaultSettings.clients(12), baseURL: proxy.baseURL,
                    requestTimeout: .seconds(15))
                try await load.registerUsers(https)
                let record = LoadRecord()
                let stop = StopSignal()
                let loadStarted = ContinuousClock.now
                var killedAt = loadStarted
                var acknowledgedAtKill = 0
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { await load.run(https, until: stop, record: record) }
                    try await record.waitUntilAcknowledged(FaultSettings.acknowledgedBeforeFault, since: loadStarted)
                    killedAt = .now
                    servers[0].kill()
                    acknowledgedAtKill = record.acknowledgedCount
                    // The survivor carries the load on: as many again acknowledged after the kill.
                    try await record.waitUntilAcknowledged(2 * acknowledgedAtKill, since: killedAt)
                    stop.set()
                    try await group.waitForAll()
                }
                let loadTook = ContinuousClock.now - loadStarted
                #expect(servers[0].child.exit == .signalled(SIGKILL))
                let attempts = record.all
                let failed = attempts.filter { !$0.acknowledged }
                let acknowledgedAfterKill = attempts.count { $0.acknowledged && $0.started > killedAt }
                #expect(acknowledgedAfterKill >= acknowledgedAtKill / 2, "the load went on through the survivor")
                // Only a purchase in flight on the killed server can fail: nginx does not resend a POST
                // that reached a server (it may be recorded), and passes every later one to the survivor.
                #expect(
                    failed.allSatisfy { $0.started < killedAt + .seconds(1) },
                    "failed after the kill: \(failed.filter { $0.started >= killedAt + .seconds(1) }.prefix(3).map(\.outcome))"
                )
                let audit = try await scenario.cluster.withClient { try await LedgerAudit.audit(attempts, client: $0) }
                #expect(audit.lost.isEmpty && audit.duplicated.isEmpty && audit.unknown.isEmpty, "\(audit)")
                #expect(audit.reconcilerPassed, "\(audit.reconcilerReport)")

                // The request lines of both servers: every request that came through nginx names the test
                // client ([::1]); the servers' own readiness probes come straight from 127.0.0.1.
                let clients = Self.loggedClients(logPath: scenario.folder + "/server.log")
                let throughProxy = clients.filter { !["/readyz", "/healthz", "/metrics"].contains($0.path) }
                let named = Dictionary(grouping: throughProxy, by: { $0.client }).mapValues(\.count)
                #expect(throughProxy.count >= audit.acknowledged, "request lines: \(throughProxy.count)")
                #expect(named.keys.sorted() == ["::1"], "clients the servers logged: \(named)")
                #expect(clients.contains { $0.path == "/api/v1/catalog" && $0.client == "::1" })

                scenario.report(
                    "2 servers behind nginx (TLS), \(load.workers) clients for \(ms(loadTook)), server 1 SIGKILLed "
                        + "after \(ms(killedAt - loadStarted)) with \(acknowledgedAtKill) acknowledged: \(audit); "
                        + "failed \(failed.count) (\(Set(failed.map(\.outcome.description)).sorted().joined(separator: ", "))), "
                        + "acknowledged after the kill \(acknowledgedAfterKill); clients in the request logs \(named)")
            }
        }
    }

    @Test(
        "nginx as shipped: plain HTTP redirected to HTTPS except ACME's challenges, HSTS on HTTPS answers, a forged X-Forwarded-For overwritten, and 429 beyond an address's burst and beyond its 20 requests in progress",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(3)))
    func shippedEdge() async throws {
        try await FaultScenario.run("tls-edge") { scenario in
            let server = try await scenario.startServer(
                options: ["--trusted-proxy", "127.0.0.1", "--allow-development-on-public-address"], logLevel: "info")
            let (certificate, key) = try await TLSProxy.makeCertificate(in: scenario.folder)
            let httpPort = try TestCluster.freePort()
            try await FaultHTTP.with(trustingOnly: certificate, followingRedirects: false) { https in
                let proxy = try await scenario.startTLSProxy(
                    inFrontOf: [server], httpPort: httpPort, certificate: certificate, key: key, limits: .asShipped,
                    https: https)
                let errorLog = scenario.folder + "/nginx/error.log"
                let hsts = "max-age=31536000"

                // Port 80: a redirect to the same path over HTTPS, without HSTS (a browser ignores it there),
                // except an ACME HTTP-01 challenge, answered from the webroot.
                let plain = "http://[::1]:\(httpPort)"
                let redirected = try await https.send(.GET, plain + "/v1/user/shop/myinfo?a=1")
                #expect(redirected.status == 301)
                #expect(redirected.headers["Location"] == ["https://[::1]/v1/user/shop/myinfo?a=1"])
                #expect(redirected.headers["Strict-Transport-Security"].isEmpty)
                let challenges = scenario.folder + "/nginx/acme/.well-known/acme-challenge"
                try FileManager.default.createDirectory(atPath: challenges, withIntermediateDirectories: true)
                try "token.thumbprint".write(toFile: challenges + "/probe", atomically: true, encoding: .utf8)
                let challenge = try await https.send(.GET, plain + "/.well-known/acme-challenge/probe")
                #expect(challenge.status == 200 && challenge.body == "token.thumbprint", "\(challenge)")

                // HTTPS: HSTS on serve's answers, errors too; a client's own X-Forwarded-For is overwritten.
                let catalog = try await https.send(
                    .GET, proxy.baseURL + "/api/v1/catalog", headers: [("X-Forwarded-For", "203.0.113.66")])
                #expect(catalog.status == 200)
                #expect(catalog.headers["Strict-Transport-Security"] == [hsts])
                let missing = try await https.send(.GET, proxy.baseURL + "/no-such-path")
                #expect(missing.status == 404 && missing.headers["Strict-Transport-Security"] == [hsts])

                // limit_req: 10 per second with a burst of 20, from a drained bucket (2 s drains 20). Requests one
                // after another (never 20 in progress at once, so limit_conn stays out of it).
                try await Task.sleep(for: .seconds(2.5))
                let burstStarted = ContinuousClock.now
                var burst: [FaultHTTP.Answer] = []
                for _ in 0..<40 { burst.append(try await https.send(.GET, proxy.baseURL + "/api/v1/catalog")) }
                let burstTook = ContinuousClock.now - burstStarted
                let refill = Int(burstTook / .milliseconds(100)) + 1
                #expect(burst.prefix(21).allSatisfy { $0.status == 200 }, "\(burst.prefix(21).map(\.status))")
                #expect(burst.allSatisfy { $0.status == 200 || $0.status == 429 }, "\(burst.map(\.status))")
                let passed = burst.count { $0.status == 200 }
                #expect(passed <= 21 + refill, "\(passed) passed in \(burstTook)")
                let refusal = try #require(burst.last { $0.status == 429 }, "\(burst.map(\.status))")
                #expect(refusal.errorCode == "rate_limited" && refusal.headers["Retry-After"] == ["1"])
                #expect(refusal.headers["Strict-Transport-Security"] == [hsts])
                let logged = (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? ""
                #expect(logged.contains("limiting requests, excess:") && logged.contains("\"shopledger_requests\""))
                #expect(!logged.contains("limiting connections"))

                // limit_conn: 21 uploads at once from a drained bucket, each holding half its body (nginx reads a
                // body whole before passing the request on): limit_req lets all 21 through (20 over the rate is
                // the burst), limit_conn refuses the one that finds 20 in progress, at once; the 20 go through
                // when their bodies end.
                let refusedByRate = logged.components(separatedBy: "limiting requests").count
                try await Task.sleep(for: .seconds(2.5))
                let uploads = (0..<21).map {
                    SlowUpload(
                        PurchaseRequest(
                            way: .jsonStub, uid: "edge-\($0)", transactionId: "edge-\($0)",
                            product: FaultFixtures.products[0]))
                }
                var outcomes: [FaultHTTP.Outcome] = []
                try await withThrowingTaskGroup(of: FaultHTTP.Outcome.self) { group in
                    for upload in uploads { group.addTask { await upload.send(https, baseURL: proxy.baseURL).0 } }
                    // The refused one answers while the others are held (they wait for finish(), which a
                    // watchdog calls after 8 s should none be refused: within nginx's client_body_timeout).
                    let watchdog = Task {
                        try await Task.sleep(for: .seconds(8))
                        for upload in uploads { upload.finish() }
                    }
                    let first = try await group.next()
                    watchdog.cancel()
                    if let first { outcomes.append(first) }
                    for upload in uploads { upload.finish() }
                    for try await outcome in group { outcomes.append(outcome) }
                }
                #expect(outcomes.count == 21)
                #expect(outcomes.first?.status == 429 && outcomes.first?.code == "rate_limited", "\(outcomes)")
                #expect(outcomes.dropFirst().allSatisfy { $0.status != nil && $0.status != 429 }, "\(outcomes)")
                // The 21 took the whole burst: once it has drained again (2 s; waiting longer only drains more),
                // a request passes, so limit_conn let go of the 20 whose bodies ended.
                try await Task.sleep(for: .seconds(2.5))
                let afterUploads = try await https.send(.GET, proxy.baseURL + "/api/v1/catalog")
                #expect(afterUploads.status == 200)
                let connections = (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? ""
                #expect(
                    connections.contains("limiting connections by zone \"shopledger_connections\""), "\(connections)")
                #expect(
                    connections.components(separatedBy: "limiting requests").count == refusedByRate, "\(connections)")

                // Every request serve logged came from the test client, none from the forged address.
                let clients = Self.loggedClients(logPath: scenario.folder + "/server.log")
                    .filter { $0.path == "/api/v1/catalog" }
                #expect(!clients.isEmpty && clients.allSatisfy { $0.client == "::1" }, "\(clients.prefix(3))")
                scenario.report(
                    "nginx as shipped: 40 requests one after another in \(ms(burstTook)): \(passed) passed, "
                        + "\(burst.count - passed) refused 429; 21 uploads at once: "
                        + "\(outcomes.map(\.description).reduce(into: [:]) { $0[$1, default: 0] += 1 })"
                )
            }
        }
    }

    /// `client=` and `path=` of every request line in the servers' log.
    static func loggedClients(logPath: String) -> [(client: String, path: String)] {
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return log.split(separator: "\n").filter { $0.hasSuffix(" request") }.compactMap {
            line in
            let fields = line.split(separator: " ")
            func value(_ key: String) -> String? {
                fields.first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
            }
            guard let client = value("client"), let path = value("path") else { return nil }
            return (client, path)
        }
    }
}
