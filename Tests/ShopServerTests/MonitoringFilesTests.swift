import Foundation
import Testing
import Webhooks
import Yams

@testable import Postgres
@testable import Shop
@testable import ShopServer

/// deploy/prometheus/ and deploy/grafana/ as an operator takes them: promtool accepts the rules and the
/// scrape config and runs the rules' cases; every metric they name is one the server exports; every
/// alert's runbook is a heading of docs/operations.md.
@Suite struct MonitoringFilesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let prometheus = root.appendingPathComponent("deploy/prometheus")
    static let rules = prometheus.appendingPathComponent("shopledger-rules.yml")
    /// The database cluster's alerts, on Patroni's own metrics.
    static let patroniRules = prometheus.appendingPathComponent("patroni-rules.yml")

    struct Failure: Error, CustomStringConvertible { let description: String }

    /// `promtool ARGS` in `folder`: its exit status and what it printed.
    static func promtool(_ arguments: [String], in folder: URL) throws -> (status: Int32, output: String) {
        let path = ["/usr/bin/promtool", "/usr/local/bin/promtool"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let path else {
            throw Failure(
                description: "promtool is not installed: run scripts/install-deps.sh --for test (make test does)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.currentDirectoryURL = folder
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    @Test("promtool accepts the rules and passes their cases")
    func rulesPassPromtool() throws {
        for name in ["shopledger-rules", "patroni-rules"] {
            let check = try Self.promtool(["check", "rules", "\(name).yml"], in: Self.prometheus)
            #expect(check.status == 0, "\(check.output)")
            #expect(check.output.contains("SUCCESS"), "\(check.output)")
            let cases = try Self.promtool(["test", "rules", "\(name).test.yml"], in: Self.prometheus)
            #expect(cases.status == 0, "\(cases.output)")
            #expect(cases.output.contains("SUCCESS"), "\(cases.output)")
        }
    }

    @Test("promtool accepts the scrape config beside the rules and a token file")
    func scrapeConfigPassesPromtool() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("monitoring-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for name in ["prometheus.yml", "shopledger-rules.yml", "patroni-rules.yml"] {
            try FileManager.default.copyItem(
                at: Self.prometheus.appendingPathComponent(name), to: folder.appendingPathComponent(name))
        }
        try Data("a-metrics-token-of-32-characters-at-least".utf8).write(
            to: folder.appendingPathComponent("shopledger-metrics-token"))
        let check = try Self.promtool(["check", "config", "prometheus.yml"], in: folder)
        #expect(check.status == 0, "\(check.output)")
    }

    /// The alerts as the rules file holds them.
    static func alerts() throws -> [[String: Any]] {
        try [rules, patroniRules].flatMap { file in
            let text = try String(contentsOf: file, encoding: .utf8)
            let document = try #require(try Yams.load(yaml: text) as? [String: Any])
            let groups = try #require(document["groups"] as? [[String: Any]])
            return groups.flatMap { ($0["rules"] as? [[String: Any]]) ?? [] }.filter { $0["alert"] != nil }
        }
    }

    /// What Patroni 3.0's `GET /metrics` exports (patroni/api.py, `do_GET_metrics`, in Debian 12's 3.0.2).
    static let patroniFamilies: Set<String> = [
        "patroni_version", "patroni_postgres_running", "patroni_postmaster_start_time", "patroni_master",
        "patroni_primary", "patroni_xlog_location", "patroni_standby_leader", "patroni_replica",
        "patroni_sync_standby", "patroni_xlog_received_location", "patroni_xlog_replayed_location",
        "patroni_xlog_replayed_timestamp", "patroni_xlog_paused", "patroni_postgres_server_version",
        "patroni_cluster_unlocked", "patroni_failsafe_mode_is_active", "patroni_postgres_timeline",
        "patroni_dcs_last_seen",
    ]

    static func patroniNames(_ expression: String) -> Set<String> {
        Set(expression.matches(of: /\bpatroni_[a-z_]+/).map { String($0.output) })
    }

    /// Every metric family a server exports once each kind of event happened once.
    static func exportedFamilies() -> Set<String> {
        let metrics = ShopMetrics()
        metrics.recordRequest(route: "/api/v1/purchases", method: "POST", status: 200, duration: .milliseconds(3))
        metrics.recordAppStoreRequest(endpoint: "transaction_info", status: 200, duration: .milliseconds(40))
        metrics.recordWebhookAttempt(type: .purchaseRecorded, outcome: "delivered", duration: .milliseconds(9))
        metrics.recordGoogleCertificateFetch(ok: true)
        metrics.recordAppStoreSync(AppStoreSynchronizer.Report(), finishedAt: Date())
        let text = metrics.exposition(
            pool: PostgresClient.Statistics(open: 1, idle: 1, leased: 0, waiting: 0), connections: (1, 0, 0))
        var families: Set<String> = ["up"]
        for line in String(decoding: text, as: UTF8.self).split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let parts = line.split(separator: " ")
            let name = String(parts[2])
            if parts[3] == "histogram" {
                families.formUnion(["_bucket", "_count", "_sum"].map { name + $0 })
            } else {
                families.insert(name)
            }
        }
        return families
    }

    /// The metric names a PromQL expression reads: ours (`shop_`, `http_`, `process_`, `shopledger_`) and
    /// Prometheus's own `up`.
    static func metricNames(_ expression: String) -> Set<String> {
        let pattern = /\b(?:(?:shop|http|process|shopledger)_[a-z_]+|up(?=\{))/
        return Set(expression.matches(of: pattern).map { String($0.output) })
    }

    @Test("every metric the alerts and the dashboard read is one the server exports")
    func namesExist() throws {
        let exported = Self.exportedFamilies()
        #expect(exported.contains("shop_receipt_refusals_total") && exported.contains("process_open_fds"))
        var read: [String: Set<String>] = [:]
        var readFromPatroni: [String: Set<String>] = [:]
        for alert in try Self.alerts() {
            read["alert \(alert["alert"] ?? "")", default: []].formUnion(Self.metricNames("\(alert["expr"] ?? "")"))
            readFromPatroni["alert \(alert["alert"] ?? "")", default: []].formUnion(
                Self.patroniNames("\(alert["expr"] ?? "")"))
        }
        let dashboard = try JSONSerialization.jsonObject(
            with: Data(contentsOf: Self.root.appendingPathComponent("deploy/grafana/shopledger-dashboard.json")))
        let panels = try #require((dashboard as? [String: Any])?["panels"] as? [[String: Any]])
        for panel in panels {
            for target in (panel["targets"] as? [[String: Any]]) ?? [] {
                read["panel \(panel["title"] ?? "")", default: []].formUnion(
                    Self.metricNames("\(target["expr"] ?? "")"))
                readFromPatroni["panel \(panel["title"] ?? "")", default: []].formUnion(
                    Self.patroniNames("\(target["expr"] ?? "")"))
            }
        }
        #expect(read.count > 30, "\(read.keys.sorted())")
        #expect(readFromPatroni.values.contains { !$0.isEmpty }, "the Patroni alerts read Patroni's metrics")
        for (reader, names) in read.sorted(by: { $0.key < $1.key }) {
            let patroni = readFromPatroni[reader] ?? []
            #expect(!names.isEmpty || !patroni.isEmpty, "\(reader) reads no metric of ours or Patroni's")
            #expect(names.subtracting(exported).isEmpty, "\(reader) reads \(names.subtracting(exported).sorted())")
            #expect(
                patroni.subtracting(Self.patroniFamilies).isEmpty,
                "\(reader) reads \(patroni.subtracting(Self.patroniFamilies).sorted()), which Patroni does not export")
        }
    }

    @Test("every alert has a summary and a runbook that is a heading of docs/operations.md")
    func runbooksExist() throws {
        let operations = try String(
            contentsOf: Self.root.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let anchors = Set(
            operations.split(separator: "\n").filter { $0.hasPrefix("#") }.map { heading in
                heading.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces).lowercased()
                    .filter { $0.isLetter || $0.isNumber || $0 == " " || $0 == "-" }
                    .replacingOccurrences(of: " ", with: "-")
            })
        let alerts = try Self.alerts()
        #expect(alerts.count >= 15)
        for alert in alerts {
            let annotations = alert["annotations"] as? [String: Any] ?? [:]
            #expect(!"\(annotations["summary"] ?? "")".isEmpty, "\(alert["alert"] ?? "") has no summary")
            let runbook = "\(annotations["runbook_url"] ?? "")"
            #expect(runbook.hasPrefix("docs/operations.md#"), "\(alert["alert"] ?? ""): \(runbook)")
            let anchor = String(runbook.drop { $0 != "#" }.dropFirst())
            #expect(anchors.contains(anchor), "\(alert["alert"] ?? ""): no heading for #\(anchor)")
        }
    }
}
