import Foundation
import NIOCore
import NIOHTTP1
import Receipts
import TestSupport
import Testing

/// The attacks of docs/security.md, against the real `shopledger serve`: on main the first killed the
/// process, the second kept a core busy for good, the third held every connection and `/healthz`.
@Suite("Faults: hostile requests against shopledger serve")
struct HostileRequestTests {
    static let product = "com.memolease.sesac1.sprout2"

    /// `POST /api/v1/notifications/app-store` with the notification of the crash: self-made x5c, signedDate 1e17.
    static func crashNotification() throws -> [UInt8] {
        FaultFixtures.json(["signedPayload": try HostileProofs.notification(signedDateMilliseconds: 1e17)])
    }

    /// `POST /api/v1/purchases` with a classic receipt whose chain has 2^`layers` paths.
    static func lookAlikeReceipt(layers: Int) throws -> [UInt8] {
        FaultFixtures.json([
            "receipt": try HostileProofs.lookAlikeChainReceipt(layers: layers, product: product, under: .appleIncRoot),
            "productId": product,
        ])
    }

    static let json = [("Content-Type", "application/json")]

    @Test(
        "out-of-range dates, a 2^64-path receipt: clear refusals, the server lives and stays quick",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(3)))
    func hostileProofs() async throws {
        try await FaultScenario.run("hostile-proofs") { scenario in
            let server = try await scenario.startServer()
            let http = scenario.http
            let load = PurchaseLoad(scenario: "hostile", workers: 1, baseURL: server.baseURL)
            try await load.registerUsers(http)
            let auth = [("Authorization", "Bearer dev:\(load.uid(0))")] + Self.json

            let notification = await http.outcome(
                .POST, server.baseURL + "/api/v1/notifications/app-store", headers: Self.json,
                body: try Self.crashNotification(), timeout: .seconds(10)
            ).0
            #expect(notification.status == 400 && notification.code == "malformed", "\(notification)")
            for created in ["0000-01-01T00:00:00+23:59", "9999-12-31T23:59:59-23:59"] {
                let receipt = TestReceiptPKI.shared.receipt(
                    TestReceipt(creationDate: created, purchases: [.init(productId: Self.product, transactionId: "d")]))
                let answer = await http.outcome(
                    .POST, server.baseURL + "/api/v1/purchases", headers: auth,
                    body: FaultFixtures.json(["receipt": receipt, "productId": Self.product]), timeout: .seconds(10)
                ).0
                #expect(answer.status == 422 && answer.code == "malformed_receipt", "\(created): \(answer)")
            }
            let started = ContinuousClock.now
            let bomb = await http.outcome(
                .POST, server.baseURL + "/api/v1/purchases", headers: auth, body: try Self.lookAlikeReceipt(layers: 64),
                timeout: .seconds(20)
            ).0
            let bombTook = ContinuousClock.now - started
            #expect(bomb.status == 422 && bomb.code == "malformed_receipt", "\(bomb)")
            let health = await TimedProbe.get(server.baseURL + "/healthz", timeout: .seconds(5), with: http)
            #expect(
                health.outcome.status == 200 && health.latency < .seconds(1), "\(health.outcome) \(ms(health.latency))")
            #expect(server.child.exit == nil, "the server is alive:\n\(server.child.logTail())")
            scenario.report(
                "crash notification: \(notification); 2^64-path receipt (\(try Self.lookAlikeReceipt(layers: 64).count) B): "
                    + "\(bomb) in \(ms(bombTook)); /healthz \(health.outcome) in \(ms(health.latency))")
        }
    }

    @Test(
        "half-open connections are closed after the idle timeout and never keep /healthz or a purchase out",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(3)))
    func halfOpenFlood() async throws {
        let count = FaultSettings.all ? 15_000 : 5_000
        try await FaultScenario.run("half-open") { scenario in
            let server = try await scenario.startServer(options: [
                "--idle-timeout", "3", "--max-connections", String(count / 2),
            ])
            let load = PurchaseLoad(scenario: "flood", workers: 1, baseURL: server.baseURL)
            try await load.registerUsers(scenario.http)
            let opened = ContinuousClock.now
            let flood = try HalfOpenConnections(count: count, port: server.port)
            defer { flood.close() }
            let openedIn = ContinuousClock.now - opened
            var probes: [TimedProbe] = []
            for _ in 0..<10 {
                probes.append(
                    await TimedProbe.get(server.baseURL + "/healthz", timeout: .seconds(5), with: scenario.http))
                try await Task.sleep(for: .milliseconds(100))
            }
            let purchase = await PurchaseRequest(
                way: .jsonStub, uid: load.uid(0), transactionId: "flood-1", product: FaultFixtures.products[0]
            ).send(scenario.http, baseURL: server.baseURL)
            let heldDuring = flood.openCount
            try await Task.sleep(for: .seconds(5))
            let heldAfter = flood.openCount

            #expect(flood.descriptors.count == count, "opened \(flood.descriptors.count) of \(count)")
            #expect(
                probes.allSatisfy { $0.outcome.status == 200 && $0.latency < .seconds(1) },
                "\(probes.map { "\($0.outcome) \(ms($0.latency))" })")
            #expect(purchase.status == PurchaseRequest.acknowledged, "\(purchase)")
            #expect(heldDuring <= count / 2, "at most --max-connections are held: \(heldDuring)")
            #expect(heldAfter == 0, "\(heldAfter) half-open connections still held 8 s after they opened")
            scenario.report(
                "\(count) half-open connections opened in \(ms(openedIn)); /healthz slowest \(ms(probes.map(\.latency).max() ?? .zero)); "
                    + "purchase \(purchase); held \(heldDuring) during (limit \(count / 2)), \(heldAfter) 5 s later")
        }
    }

    @Test(
        "under a purchase load, crash notifications and 2^64-path receipts lose no acknowledged purchase, /healthz stays within 1 s, the CPU goes back to idle",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(5)))
    func hostileProofsUnderLoad() async throws {
        try await FaultScenario.run("hostile-load") { scenario in
            let server = try await scenario.startServer(options: ["--request-timeout", "10"])
            let http = scenario.http
            let load = PurchaseLoad(scenario: "hl", workers: FaultSettings.clients(8), baseURL: server.baseURL)
            try await load.registerUsers(http)
            let attacker = PurchaseLoad(scenario: "attacker", workers: 2, baseURL: server.baseURL)
            try await attacker.registerUsers(http)
            let notification = try Self.crashNotification()
            let bomb = try Self.lookAlikeReceipt(layers: 64)
            let record = LoadRecord()
            let stop = StopSignal()
            let started = ContinuousClock.now

            let (probes, hostile) = try await withThrowingTaskGroup(of: ([TimedProbe], [FaultHTTP.Outcome]).self) {
                group in
                group.addTask {
                    await load.run(http, until: stop, record: record)
                    return ([], [])
                }
                group.addTask {
                    var probes: [TimedProbe] = []
                    while !stop.isSet {
                        probes.append(
                            await TimedProbe.get(server.baseURL + "/healthz", timeout: .seconds(5), with: http))
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    return (probes, [])
                }
                for worker in 0..<2 {
                    group.addTask {
                        var outcomes: [FaultHTTP.Outcome] = []
                        let headers = [("Authorization", "Bearer dev:\(attacker.uid(worker))")] + Self.json
                        for round in 0..<(FaultSettings.all ? 20 : 8) {
                            let (path, body) =
                                round.isMultiple(of: 2)
                                ? ("/api/v1/notifications/app-store", notification) : ("/api/v1/purchases", bomb)
                            outcomes.append(
                                await http.outcome(
                                    .POST, server.baseURL + path, headers: headers, body: body, timeout: .seconds(15)
                                ).0)
                        }
                        return ([], outcomes)
                    }
                }
                try await Task.sleep(for: .seconds(1))
                try await record.waitUntilAcknowledged(FaultSettings.acknowledgedBeforeFault, since: started)
                var probes: [TimedProbe] = []
                var hostile: [FaultHTTP.Outcome] = []
                var finished = 0
                // The attackers finish first; then the load and the prober stop.
                while let (someProbes, someHostile) = try await group.next() {
                    probes += someProbes
                    hostile += someHostile
                    if !someHostile.isEmpty {
                        finished += 1
                        if finished == 2 { stop.set() }
                    }
                }
                return (probes, hostile)
            }
            let lastAnswer = ContinuousClock.now
            try await Task.sleep(until: lastAnswer + .seconds(2))
            let idle = try await ProcessCPU.usage(server.child.pid, over: .seconds(1))

            let attempts = record.all
            let audit = try await scenario.cluster.withClient { try await LedgerAudit.audit(attempts, client: $0) }
            let slowest = probes.map(\.latency).max() ?? .zero
            #expect(server.child.exit == nil, "the server is alive:\n\(server.child.logTail())")
            #expect(
                hostile.allSatisfy { $0.status == 400 || $0.status == 422 }, "\(Set(hostile.map(\.description)))")
            #expect(!probes.isEmpty && probes.allSatisfy { $0.outcome.status == 200 }, "every /healthz answered 200")
            #expect(slowest < .seconds(1), "slowest /healthz \(ms(slowest))")
            #expect(audit.lost.isEmpty && audit.duplicated.isEmpty && audit.unknown.isEmpty, "\(audit)")
            #expect(audit.reconcilerPassed, "\(audit.reconcilerReport)")
            #expect(
                (idle ?? 1) < 0.1, "CPU 2 s after the last answer: \(idle.map { "\(Int($0 * 100))%" } ?? "unknown")")
            scenario.report(
                "\(attempts.count(where: \.acknowledged)) acknowledged purchases beside \(hostile.count) hostile proofs "
                    + "(\(Set(hostile.map(\.description)).sorted().joined(separator: ", "))); \(probes.count) /healthz, "
                    + "slowest \(ms(slowest)); CPU 2 s after the last answer \(idle.map { "\(Int($0 * 100))%" } ?? "?"); \(audit)"
            )
        }
    }

    /// `shopledger serve` with `arguments` and `environment`, against a private cluster under `folder`
    /// (which must not be started: every check comes first).
    static func serve(
        _ arguments: [String], environment: [String: String] = [:], folder: String
    ) async throws
        -> (Spawned.Termination, String)
    {
        try await Spawned.run(
            [try ServerProcess.binary(), "serve", "--data-dir", folder + "/data", "--dev-auth"] + arguments,
            environment: Spawned.environment(environment), timeout: .seconds(60))
    }

    @Test(
        "serve refuses secrets others may read, a short admin token, a port that is no number and a trusted proxy that is no address, before it creates a cluster",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(2)))
    func optionsCheckedFirst() async throws {
        let folder = try FaultResources.newFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let tokenFile = folder + "/admin-token"
        try FaultFixtures.adminToken.write(toFile: tokenFile, atomically: true, encoding: .utf8)
        for mode in [0o644, 0o640, 0o604] {
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: tokenFile)
            let (status, output) = try await Self.serve(["--admin-token-file", tokenFile], folder: folder)
            #expect(status != .exited(0) && output.contains("chmod 600"), "mode \(String(mode, radix: 8)): \(output)")
        }
        let cases: [([String], [String: String], String)] = [
            ([], ["SHOPLEDGER_ADMIN_TOKEN": "short"], "at least 16 bytes"),
            ([], ["SHOPLEDGER_PORT": "abc"], "SHOPLEDGER_PORT must be an integer"),
            (["--restore-limit", "lots"], [:], "--restore-limit"),
            (["--idle-timeout", "0"], [:], "--idle-timeout must be a number of seconds between 0.1 and 3600"),
            (["--max-connections", "0"], [:], "--max-connections must be an integer between 1 and 1000000"),
            (
                ["--trusted-proxy", "10.0.0.1", "--trusted-proxy", "nginx.internal"], [:],
                "--trusted-proxy: \"nginx.internal\""
            ),
            ([], ["SHOPLEDGER_TRUSTED_PROXY": "10.0.0.0/8,10.0.0.0/33"], "SHOPLEDGER_TRUSTED_PROXY: \"10.0.0.0/33\""),
            (["--trusted-proxy", "127.0.0.1"], [:], "--allow-development-on-public-address"),
        ]
        for (arguments, environment, message) in cases {
            let (status, output) = try await Self.serve(arguments, environment: environment, folder: folder)
            #expect(status != .exited(0) && output.contains(message), "\(arguments) \(environment): \(output)")
        }
        #expect(!FileManager.default.fileExists(atPath: folder + "/data"), "no cluster was created")
    }
}
