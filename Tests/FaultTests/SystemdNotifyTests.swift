import Foundation
import NIOCore
import NIOHTTP1
import TestSupport
import Testing

/// The real binary under systemd's `Type=notify` (deploy/systemd/shopledger.service), with a unix datagram
/// socket standing in for systemd's: `READY=1` only once `/readyz` answers 200 (so `systemctl start` returns
/// with the server listening), `STOPPING=1` when SIGTERM arrives.
@Suite("serve under Type=notify, with the real binary")
struct SystemdNotifyTests {
    @Test(
        "serve sends READY=1 once its port answers /readyz 200, and STOPPING=1 on SIGTERM",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(3)))
    func readyThenStopping() async throws {
        try await FaultScenario.run("notify") { scenario in
            let systemd = try NotifySocket(path: scenario.folder + "/notify")
            defer { systemd.close() }
            let port = try TestCluster.freePort()
            // The moment READY=1 arrives, the port is asked at once: systemd's `start` returns then.
            let atReady = Task {
                let deadline = ContinuousClock.now + .seconds(60)
                while ContinuousClock.now < deadline {
                    if let message = systemd.receive(timeout: .milliseconds(20)) {
                        let answer = try? await scenario.http.send(
                            .GET, "http://127.0.0.1:\(port)/readyz", timeout: .seconds(2))
                        return (message, answer?.status)
                    }
                    try await Task.sleep(for: .milliseconds(5))
                }
                return ("nothing within 60 s", nil as Int?)
            }
            let server = try await scenario.startServer(
                port: port, environment: ["NOTIFY_SOCKET": systemd.address])
            let (ready, status) = try await atReady.value
            #expect(ready == "READY=1\nSTATUS=serving on http://127.0.0.1:\(port)")
            #expect(status == 200, "/readyz the moment READY=1 arrived")
            #expect(systemd.receive(timeout: .milliseconds(200)) == nil, "one READY=1")

            let stopAsked = ContinuousClock.now
            server.child.signal(SIGTERM)
            var stopping: String?
            while stopping == nil, ContinuousClock.now < stopAsked + .seconds(5) {
                stopping = systemd.receive(timeout: .milliseconds(20))
                if stopping == nil { try await Task.sleep(for: .milliseconds(5)) }
            }
            let toldAfter = ContinuousClock.now - stopAsked
            #expect(stopping == "STOPPING=1")
            let exit = await server.child.waitForExit(timeout: .seconds(20))
            #expect(exit == .exited(0), "serve ended \(exit.map(\.description) ?? "not at all")")
            scenario.report(
                "READY=1 with /readyz \(status.map(String.init) ?? "-"); STOPPING=1 \(ms(toldAfter)) after SIGTERM")
        }
    }
}
