import Foundation
import NIOCore
import NIOHTTP1
import TestSupport

/// Three PostgreSQL nodes under Patroni (each in a network namespace of its own), one etcd, and HAProxy
/// in front, made by `scripts/ha-lab.sh` from the shipped `deploy/patroni` and `deploy/haproxy`
/// configurations. The faults are the script's too: a node killed, frozen, cut off, its PostgreSQL
/// crashed, a planned switchover.
struct PatroniLab: Sendable {
    static let nodes = ["node1", "node2", "node3"]
    let folder: String
    /// Through HAProxy: what the servers use.
    let url: String
    let appPassword: String

    static var script: String { FileManager.default.currentDirectoryPath + "/scripts/ha-lab.sh" }

    static func address(_ node: String) -> String { "10.77.0.1\(node.last!)" }

    /// Every node in one conninfo, `first` first, for a server that finds the leader itself (libpq's
    /// `target_session_attrs=read-write`), without HAProxy.
    func multiHostURL(first: String) -> String {
        let hosts = [first] + Self.nodes.filter { $0 != first }
        return "host=\(hosts.map(Self.address).joined(separator: ",")) port=5432,5432,5432 dbname=shopledger "
            + "user=shopledger password=\(appPassword) target_session_attrs=read-write"
    }

    /// One node only, whatever its role.
    func nodeURL(_ node: String) -> String {
        "host=\(Self.address(node)) port=5432 dbname=shopledger user=shopledger password=\(appPassword)"
    }

    /// Makes the lab under `folder`, runs `body`, and takes the lab down however `body` ends.
    static func with<R: Sendable>(folder: String, _ body: (PatroniLab) async throws -> R) async throws -> R {
        guard geteuid() == 0 else { throw FaultTestError("the Patroni lab needs root (network namespaces)") }
        let port = try TestCluster.freePort()
        let up = try await Spawned.run([script, "up", folder, String(port)], timeout: .seconds(180))
        guard up.status == .exited(0) else {
            _ = try? await Spawned.run([script, "down", folder])
            throw FaultTestError("ha-lab.sh up failed (\(up.status)):\n\(up.output)")
        }
        let url = up.output.split(separator: "\n").last.map(String.init) ?? ""
        let password = try String(contentsOfFile: folder + "/app-password", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let lab = PatroniLab(folder: folder, url: url, appPassword: password)
        do {
            let result = try await body(lab)
            _ = try? await Spawned.run([script, "down", folder])
            return result
        } catch {
            let logs = Self.nodes.map { node in
                let log = (try? String(contentsOfFile: "\(folder)/\(node)/patroni.log", encoding: .utf8)) ?? ""
                return "--- \(node) ---\n" + log.split(separator: "\n").suffix(8).joined(separator: "\n")
            }
            _ = try? await Spawned.run([script, "down", folder])
            throw FaultTestError("\(error)\n" + logs.joined(separator: "\n"))
        }
    }

    /// A fault (or its end): `kill`, `freeze`, `thaw`, `cut`, `mend` take a node; `boot`,
    /// `crash-postgres` the folder and a node; `switchover` the folder.
    func run(_ verb: String, _ node: String? = nil) async throws {
        let arguments: [String] =
            switch verb {
            case "boot", "crash-postgres": [verb, folder, node ?? ""]
            case "switchover": [verb, folder]
            default: [verb, node ?? ""]
            }
        let result = try await Spawned.run([Self.script] + arguments, timeout: .seconds(60))
        guard result.status == .exited(0) else {
            throw FaultTestError("ha-lab.sh \(arguments.joined(separator: " ")): \(result.status)\n\(result.output)")
        }
    }

    /// The node whose Patroni answers `GET /primary` with 200 (it holds the leader lock), asked of
    /// every node at once, each within `timeout`.
    func leader(_ http: FaultHTTP, timeout: TimeAmount = .milliseconds(500)) async -> String? {
        await withTaskGroup(of: String?.self) { group in
            for node in Self.nodes {
                group.addTask {
                    let answer = try? await http.send(
                        .GET, "http://\(Self.address(node)):8008/primary", timeout: timeout)
                    return answer?.status == 200 ? node : nil
                }
            }
            // The first 200 is the answer: the others (a dead node's ask runs to its timeout) are not waited for.
            for await node in group where node != nil {
                group.cancelAll()
                return node
            }
            return nil
        }
    }

    /// A member as Patroni's `GET /cluster` lists it.
    struct Member: Sendable, Equatable {
        let name: String
        let role: String
        let state: String
        let timeline: Int?
    }

    /// The cluster as the first node that answers sees it.
    func members(_ http: FaultHTTP) async -> [Member] {
        for node in Self.nodes {
            guard
                let answer = try? await http.send(
                    .GET, "http://\(Self.address(node)):8008/cluster", timeout: .milliseconds(500)),
                answer.status == 200, let list = answer.json["members"] as? [[String: Any]]
            else { continue }
            return list.map {
                Member(
                    name: $0["name"] as? String ?? "", role: $0["role"] as? String ?? "",
                    state: $0["state"] as? String ?? "", timeline: $0["timeline"] as? Int)
            }
        }
        return []
    }

    /// Waits until `node` runs as a replica of the current leader's timeline; returns when it did.
    func waitUntilReplica(
        _ node: String, _ http: FaultHTTP, within limit: Duration
    ) async throws -> ContinuousClock.Instant? {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let members = await members(http)
            let leaderTimeline = members.first { $0.role == "leader" }?.timeline
            if let member = members.first(where: { $0.name == node }),
                ["replica", "sync_standby"].contains(member.role), member.state == "running",
                member.timeline != nil, member.timeline == leaderTimeline
            {
                return .now
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        return nil
    }
}
