import Foundation
import NIOCore
import NIOHTTP1

/// HAProxy from Debian (`haproxy`, installed by scripts/install-deps.sh) in front of several
/// `shopledger serve` processes, as an operator would run it: round robin, every server health-checked
/// on `/readyz`, a POST retried on another server only when the connection could not be made (never
/// once the request was sent: a purchase is not replayed behind the client's back).
struct LoadBalancer: Sendable {
    let child: Spawned
    let port: Int
    let baseURL: String

    /// `haproxy` on PATH or in /usr/sbin (where Debian puts it, often not on a user's PATH).
    static func binary() throws -> String {
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        guard
            let found = (folders + ["/usr/sbin", "/usr/local/sbin"]).map({ $0 + "/haproxy" }).first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else {
            throw FaultTestError("haproxy was not found; scripts/install-deps.sh installs it (apt-get install haproxy)")
        }
        return found
    }

    /// The configuration for `backends` (ports on 127.0.0.1), listening on `port`.
    static func configuration(port: Int, backends: [Int]) -> String {
        let servers = backends.enumerated().map { index, backend in
            "    server shopledger\(index) 127.0.0.1:\(backend) check inter 200ms fall 2 rise 1"
        }
        return """
            global
                maxconn 2000
            defaults
                mode http
                timeout connect 2s
                timeout client 60s
                timeout server 60s
                retries 2
                option redispatch
                retry-on conn-failure
            frontend shop
                bind 127.0.0.1:\(port)
                default_backend shopledger
            backend shopledger
                balance roundrobin
                option httpchk GET /readyz
            \(servers.joined(separator: "\n"))

            """
    }

    /// Starts HAProxy in the foreground (`-db`), its output appended to `folder/haproxy.log`, and waits
    /// until a request through it reaches a ready server.
    static func start(port: Int, backends: [Int], folder: String, http: FaultHTTP) async throws -> LoadBalancer {
        let configFile = folder + "/haproxy.cfg"
        try configuration(port: port, backends: backends).write(toFile: configFile, atomically: true, encoding: .utf8)
        let child = try Spawned.start(
            [try binary(), "-db", "-f", configFile], environment: Spawned.environment([:]),
            logPath: folder + "/haproxy.log")
        let balancer = LoadBalancer(child: child, port: port, baseURL: "http://127.0.0.1:\(port)")
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if let exit = child.exit {
                balancer.kill()
                throw FaultTestError("haproxy ended (\(exit)) before it was ready:\n\(child.logTail())")
            }
            if let answer = try? await http.send(.GET, balancer.baseURL + "/readyz", timeout: .seconds(2)),
                answer.status == 200
            {
                return balancer
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        balancer.kill()
        throw FaultTestError("haproxy did not pass a request within 20 s:\n\(child.logTail())")
    }

    func kill() {
        child.killAndReap()
    }
}
