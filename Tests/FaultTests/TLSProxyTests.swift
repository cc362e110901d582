import Foundation
import NIOCore
import NIOHTTP1
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
                let proxy = try await scenario.startTLSProxy(
                    inFrontOf: servers, certificate: certificate, key: key, https: https)
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
