import APIViews
import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore

/// `shopledger standby cluster --patroni URL…`: a Patroni cluster as an operator needs to see it. The
/// members and their roles as Patroni's REST API lists them (`GET /cluster`, what `patronictl list`
/// shows), and each node's own word on whether its PostgreSQL runs as a primary (`GET /patroni`): two
/// primaries at once (an old leader back on its old timeline) is said, not averaged away. Exit 1 when
/// there is no running leader, no synchronous standby (with `synchronous_mode_strict` purchases then
/// wait), or more than one primary.
struct StandbyClusterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster",
        abstract:
            "Show a Patroni cluster's members and roles; exit 1 without a running leader, without a synchronous standby, or with two primaries."
    )

    @Option(
        name: .customLong("patroni"),
        help: ArgumentHelp(
            "A node's Patroni REST API (http://node1:8008); give every node, once each. Default: $SHOPLEDGER_PATRONI_URLS, comma-separated",
            valueName: "url"))
    var patroni: [String] = []

    @Flag(help: "Print the cluster as JSON.")
    var json = false

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let urls = try resolvedURLs()
        let client = HTTPClient.shared
        var cluster: PatroniClusterAnswer?
        var statuses: [PatroniNodeStatus] = []
        for url in urls {
            if cluster == nil { cluster = try? await Self.get(PatroniClusterAnswer.self, url + "/cluster", client) }
            let status = try? await Self.get(PatroniStatusAnswer.self, url + "/patroni", client)
            statuses.append(PatroniNodeStatus(url: url, answer: status))
        }
        guard let cluster else {
            throw ValidationError("no Patroni REST API answered GET /cluster: \(urls.joined(separator: ", "))")
        }
        let report = PatroniClusterReport(members: cluster.members, nodes: statuses)
        if json {
            try JSONOutput.print(report)
        } else {
            print(report.text)
        }
        if !report.problems.isEmpty { throw ExitCode(1) }
    }

    private func resolvedURLs() throws -> [String] {
        var urls = patroni
        if urls.isEmpty, let variable = Environment.string("SHOPLEDGER_PATRONI_URLS") {
            urls = variable.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        urls = urls.filter { !$0.isEmpty }.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        guard !urls.isEmpty else {
            throw ValidationError(
                "give each node's Patroni REST API: --patroni http://node1:8008 (or SHOPLEDGER_PATRONI_URLS)")
        }
        for url in urls where !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
            throw ValidationError("--patroni takes an http(s) URL, not '\(url)'")
        }
        return urls
    }

    private static func get<T: Decodable>(_ type: T.Type, _ url: String, _ client: HTTPClient) async throws -> T {
        let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(2))
        let body = try await response.body.collect(upTo: 1 << 20)
        // Patroni answers /patroni with 503 on a node that is not running: the body still says why.
        return try JSONDecoder().decode(T.self, from: Data(body.readableBytesView))
    }
}

/// `GET /cluster` (Patroni 3.0): `{"members": [{"name", "role", "state", "host", "port", "timeline", "lag"}]}`;
/// `role` is `leader`, `sync_standby`, `replica` or `standby_leader`; `lag` is bytes or `"unknown"`.
struct PatroniClusterAnswer: Decodable {
    struct Member: Decodable {
        let name: String
        let role: String
        let state: String?
        let host: String?
        let port: Int?
        let timeline: Int?
        let lagBytes: Int?

        enum CodingKeys: String, CodingKey { case name, role, state, host, port, timeline, lag }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            role = try container.decode(String.self, forKey: .role)
            state = try container.decodeIfPresent(String.self, forKey: .state)
            host = try container.decodeIfPresent(String.self, forKey: .host)
            port = try container.decodeIfPresent(Int.self, forKey: .port)
            timeline = try container.decodeIfPresent(Int.self, forKey: .timeline)
            lagBytes = try? container.decodeIfPresent(Int.self, forKey: .lag)
        }
    }

    let members: [Member]
}

/// `GET /patroni`: the node's own PostgreSQL, `role` `master`/`primary` or `replica`, and its `state`.
struct PatroniStatusAnswer: Decodable {
    let state: String?
    let role: String?
    let timeline: Int?
}

struct PatroniNodeStatus {
    let url: String
    let answer: PatroniStatusAnswer?

    var runsAsPrimary: Bool {
        guard let answer, answer.state == "running" else { return false }
        return answer.role == "master" || answer.role == "primary"
    }
}

/// What `standby cluster` prints, and what is wrong.
struct PatroniClusterReport: Encodable {
    struct Member: Encodable {
        let name: String
        let role: String
        @NullWhenNil var state: String?
        @NullWhenNil var address: String?
        @NullWhenNil var timeline: Int?
        @NullWhenNil var lagBytes: Int?

        enum CodingKeys: String, CodingKey {
            case name, role, state, address, timeline
            case lagBytes = "lag_bytes"
        }
    }

    struct Node: Encodable {
        let url: String
        /// The node's own word: `primary`, `replica`, or `unreachable`.
        let runsAs: String
        @NullWhenNil var timeline: Int?

        enum CodingKeys: String, CodingKey {
            case url, timeline
            case runsAs = "runs_as"
        }
    }

    let members: [Member]
    let nodes: [Node]
    @NullWhenNil var leader: String?
    @NullWhenNil var synchronousStandby: String?
    let problems: [String]

    enum CodingKeys: String, CodingKey {
        case members, nodes, leader, problems
        case synchronousStandby = "synchronous_standby"
    }

    init(members: [PatroniClusterAnswer.Member], nodes: [PatroniNodeStatus]) {
        self.members = members.map { member in
            Member(
                name: member.name, role: member.role, state: member.state,
                address: member.host.map { host in member.port.map { "\(host):\($0)" } ?? host },
                timeline: member.timeline, lagBytes: member.lagBytes)
        }
        self.nodes = nodes.map {
            Node(
                url: $0.url, runsAs: $0.answer == nil ? "unreachable" : $0.runsAsPrimary ? "primary" : "replica",
                timeline: $0.answer?.timeline)
        }
        let leader = members.first { $0.role == "leader" && $0.state == "running" }?.name
        let synchronous = members.first { $0.role == "sync_standby" && $0.state == "running" }?.name
        var problems: [String] = []
        if leader == nil { problems.append("no running leader: purchases fail until one is promoted") }
        if synchronous == nil {
            problems.append("no running synchronous standby: with synchronous_mode_strict, purchases wait for one")
        }
        let primaries = nodes.filter(\.runsAsPrimary)
        if primaries.count > 1 {
            problems.append(
                "\(primaries.count) nodes run as primary (\(primaries.map(\.url).joined(separator: ", "))): "
                    + "only the leader's may take writes (HAProxy's GET /primary sees to it)")
        }
        self.leader = leader
        self.synchronousStandby = synchronous
        self.problems = problems
    }

    var text: String {
        var lines = members.map { member in
            var line = "\(member.name)  \(member.role)  \(member.state ?? "?")"
            if let address = member.address { line += "  \(address)" }
            if let timeline = member.timeline { line += "  timeline \(timeline)" }
            if let lag = member.lagBytes { line += "  \(lag) bytes behind" }
            return line
        }
        lines += nodes.map { node in
            node.runsAs == "unreachable"
                ? "\(node.url): unreachable"
                : "\(node.url): runs as \(node.runsAs)" + (node.timeline.map { " on timeline \($0)" } ?? "")
        }
        lines +=
            problems.isEmpty
            ? ["ok: leader \(leader ?? ""), synchronous standby \(synchronousStandby ?? "")"] : problems
        return lines.joined(separator: "\n")
    }
}
