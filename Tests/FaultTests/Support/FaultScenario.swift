import Foundation
import Synchronization
import TestSupport

/// One fault scenario's world: a folder, a PostgreSQL cluster, an HTTP client and the servers it starts.
/// `run` tears all of it down however the body ends (servers killed, cluster stopped, folder removed),
/// so that no failing test leaves a process behind for the next run.
final class FaultScenario: Sendable {
    let name: String
    let folder: String
    let cluster: FaultCluster
    let http: FaultHTTP
    private let servers = Mutex<[ServerProcess]>([])
    private let balancers = Mutex<[LoadBalancer]>([])

    private init(name: String, folder: String, cluster: FaultCluster, http: FaultHTTP) {
        self.name = name
        self.folder = folder
        self.cluster = cluster
        self.http = http
    }

    static func run(_ name: String, _ body: (FaultScenario) async throws -> Void) async throws {
        let folder = try FaultResources.newFolder()
        let cluster = try await FaultCluster.start(in: folder)
        do {
            try await FaultHTTP.with { http in
                let scenario = FaultScenario(name: name, folder: folder, cluster: cluster, http: http)
                do {
                    try await body(scenario)
                    scenario.killServers()
                } catch {
                    scenario.killServers()
                    throw error
                }
            }
        } catch {
            // Keep the server log for the failure message, then clean up.
            let log = (try? String(contentsOfFile: folder + "/server.log", encoding: .utf8)) ?? ""
            cluster.destroy()
            throw FaultTestError(
                "\(error)\n--- last lines of the server log ---\n"
                    + log.split(separator: "\n").suffix(25).joined(separator: "\n"))
        }
        cluster.destroy()
    }

    /// Starts `shopledger serve` on this scenario's cluster (or `databaseURL`) and waits until it is ready;
    /// `binary` and `environment` as in `ServerProcess.start`.
    func startServer(
        port: Int? = nil, databaseURL: String? = nil, options: [String] = [], logLevel: String = "notice",
        binary: String? = nil,
        environment: [String: String] = [:], development: Bool = true
    ) async throws
        -> ServerProcess
    {
        let server = try await ServerProcess.start(
            databaseURL: databaseURL ?? cluster.url, folder: folder, port: port, options: options, http: http,
            binary: binary, environment: environment, logLevel: logLevel, development: development)
        servers.withLock { $0.append(server) }
        return server
    }

    /// Starts HAProxy in front of `backends` and waits until it passes a request to one of them.
    func startLoadBalancer(inFrontOf backends: [ServerProcess]) async throws -> LoadBalancer {
        let balancer = try await LoadBalancer.start(
            port: try TestCluster.freePort(), backends: backends.map(\.port), folder: folder, http: http)
        FaultResources.register(server: balancer.child.pid, folder: folder)
        balancers.withLock { $0.append(balancer) }
        return balancer
    }

    /// Starts nginx terminating TLS in front of `backends` (``TLSProxy``), reached with `https`, and
    /// waits until it passes a request to one of them. Its plain-HTTP port is `httpPort`.
    func startTLSProxy(
        inFrontOf backends: [ServerProcess], httpPort: Int, certificate: String, key: String,
        limits: TLSProxy.PerAddressLimits, https: FaultHTTP
    ) async throws -> LoadBalancer {
        let proxy = try await TLSProxy.start(
            port: try TestCluster.freePort(), httpPort: httpPort, backends: backends.map(\.port),
            certificate: certificate, key: key, folder: folder, limits: limits, https: https)
        FaultResources.register(server: proxy.child.pid, folder: folder)
        balancers.withLock { $0.append(proxy) }
        return proxy
    }

    private func killServers() {
        for balancer in balancers.withLock({ $0 }) {
            balancer.kill()
            FaultResources.release(server: balancer.child.pid)
        }
        for server in servers.withLock({ $0 }) { server.kill() }
    }

    /// A report line on the test output (docs/reliability.md names the scenarios; their figures come from here).
    func report(_ line: String) {
        print("FAULT \(name): \(line)")
    }
}
