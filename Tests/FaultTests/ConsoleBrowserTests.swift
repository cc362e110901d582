import Foundation
import NIOHTTP1
import Postgres
import TestSupport
import Testing
import Webhooks

/// The operators' console in a real browser (issue 42): the real `shopledger serve --console-port`
/// against a real PostgreSQL, driven by Debian's Chromium through chromedriver and Selenium
/// (Tests/Browser/console_browser_test.py, which says what it does), with axe-core on every page it
/// visits. `scripts/install-deps.sh --for test` (run by `make test`) installs the browser, the driver and
/// the Python packages (into .build/browser-venv).
@Suite("the console in Chromium through WebDriver")
struct ConsoleBrowserTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The venv's Python (install-deps makes it), or `SHOPLEDGER_BROWSER_PYTHON`.
    static func python() throws -> String {
        if let configured = ProcessInfo.processInfo.environment["SHOPLEDGER_BROWSER_PYTHON"], !configured.isEmpty {
            return configured
        }
        let venv = root.appendingPathComponent(".build/browser-venv/bin/python3").path
        guard FileManager.default.isExecutableFile(atPath: venv) else {
            throw FaultTestError(
                "no Selenium venv at \(venv): run scripts/install-deps.sh --for test (make test does)")
        }
        return venv
    }

    /// `psql`, with which the script makes a session idle in the database.
    static func psql() -> String? {
        var folders = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        let debian = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: debian)) ?? []
        folders += versions.compactMap { Int($0) }.sorted(by: >).map { "\(debian)/\($0)/bin" }
        return folders.map { $0 + "/psql" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test(
        "an admin finds a customer, grants and revokes an item, opens a report, replays a webhook; support is refused on admin pages; forms without their CSRF token are refused; an idle session is sent to sign in; axe-core finds nothing serious",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(5)))
    func browser() async throws {
        let python = try Self.python()
        let psql = try #require(
            Self.psql(), "psql (Debian's postgresql-client) on PATH or in /usr/lib/postgresql/*/bin")
        try await FaultScenario.run("console-browser") { scenario in
            let consolePort = try TestCluster.freePort()
            let server = try await scenario.startServer(
                options: ["--console-port", String(consolePort), "--webhook-allow-loopback"])
            let console = "http://127.0.0.1:\(consolePort)"

            // Operators, as an operator adds them: the CLI, the password from a private file.
            let passwords = ["mina": "admin-password-for-the-browser", "joon": "support-password-for-the-browser"]
            for (name, role) in [("mina", "admin"), ("joon", "support")] {
                let file = scenario.folder + "/password-\(name)"
                try passwords[name]!.write(toFile: file, atomically: true, encoding: .utf8)
                try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
                let added = try await Spawned.run([
                    try ServerProcess.binary(), "operators", "add", name, "--role", role, "--password-file", file,
                    "--database-url", scenario.cluster.url,
                ])
                #expect(added.status == .exited(0), "\(added.output)")
            }

            // A webhook endpoint first (events are written only while one listens, migration 0018): a receiver
            // on loopback, which gets each event once before the script replays one.
            let receiver = WebhookReceiver(secret: "whsec_console_browser_0123456789", port: try TestCluster.freePort())
            try await scenario.cluster.withClient { client in
                _ = try await WebhookStore(client: client).addEndpoint(
                    url: try WebhookURL(receiver.url, destinations: .publicAndLoopback), events: nil,
                    secret: "whsec_console_browser_0123456789", actor: "browser-test")
            }
            try await receiver.serving {
                try await Self.run(
                    scenario: scenario, python: python, psql: psql, console: console, shop: server.baseURL,
                    receiver: receiver, passwords: passwords)
            }
        }
    }

    /// The customer, the event's first delivery, then the script.
    static func run(
        scenario: FaultScenario, python: String, psql: String, console: String, shop: String,
        receiver: WebhookReceiver, passwords: [String: String]
    ) async throws {
        do {
            // A customer with two purchases, through the shop's development surface (stub receipts).
            let uid = "browser-customer-1"
            let registered = try await scenario.http.send(
                .POST, shop + "/api/v1/me", headers: [("Authorization", "Bearer dev:\(uid)")])
            #expect(registered.status == 201, "\(registered.body)")
            let purchases = [
                ("2000000842000001", FaultFixtures.products[0]), ("2000000842000002", FaultFixtures.products[5]),
            ]
            for (transaction, product) in purchases {
                let outcome = await PurchaseRequest(
                    way: .jsonStub, uid: uid, transactionId: transaction, product: product
                ).send(scenario.http, baseURL: shop)
                #expect(outcome.status == 200, "\(outcome)")
            }
            let event = try await scenario.cluster.withClient { client in
                try await client.query("SELECT min(event_id) FROM webhook_outbox").single().decode(Int64.self, at: 0)
            }
            // The event's first delivery, so that the replay has something to queue again.
            let first = ContinuousClock.now
            while !receiver.deliveries.contains(where: { $0.id == "evt_\(event)" }) {
                guard ContinuousClock.now - first < .seconds(30) else {
                    throw FaultTestError("evt_\(event) was not delivered within 30 s")
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            let screenshots = Self.root.appendingPathComponent(".build/console-screenshots").path
            try? FileManager.default.removeItem(atPath: screenshots)

            let started = ContinuousClock.now
            let (status, output) = try await Spawned.run(
                [
                    python, Self.root.appendingPathComponent("Tests/Browser/console_browser_test.py").path,
                    "--console", console, "--shop", shop, "--uid", uid,
                    "--transaction-id", purchases[1].0, "--purchases", purchases[0].0, purchases[1].0,
                    "--admin", "mina", "--support", "joon", "--database-url", scenario.cluster.url, "--psql", psql,
                    // The stub receipts' purchases are of 2025-11-13, 2,500 KRW each.
                    "--report-month", "2025-11", "--report-total", "5,000", "--webhook-event", "evt_\(event)",
                    "--screenshots", screenshots, "--summary", scenario.folder + "/browser-summary.json",
                ],
                environment: Spawned.environment([
                    "CONSOLE_ADMIN_PASSWORD": passwords["mina"]!, "CONSOLE_SUPPORT_PASSWORD": passwords["joon"]!,
                ]), timeout: .seconds(240))
            // The output holds Selenium's and Chromium's warnings too: the summary is read from its file.
            let summary = try #require(
                (try? Data(contentsOf: URL(fileURLWithPath: scenario.folder + "/browser-summary.json"))).flatMap {
                    try? JSONSerialization.jsonObject(with: $0) as? [String: Any]
                }, "\(status)\n\(output.suffix(4000))")
            let steps = summary["steps"] as? [[String: Any]] ?? []
            for step in steps where step["passed"] as? Bool != true {
                Issue.record("\(step["name"] ?? "?"): \(step["detail"] ?? "")")
            }
            let pages = summary["axe"] as? [[String: Any]] ?? []
            let serious = pages.flatMap { page in
                (page["violations"] as? [[String: Any]] ?? []).filter {
                    ["serious", "critical"].contains($0["impact"] as? String ?? "")
                }.map { "\(page["page"] ?? "?"): \($0["id"] ?? "?") (\($0["impact"] ?? "?")) \($0["nodes"] ?? "")" }
            }
            #expect(serious.isEmpty, "\(serious)")
            #expect(status == .exited(0), "\(output.suffix(4000))")
            #expect(summary["passed"] as? Bool == true)
            // The scenario's steps all ran: a script that stopped early passes nothing.
            #expect(steps.count >= 40, "\(steps.count) steps")
            #expect(pages.count >= 25, "\(pages.count) pages checked by axe-core")
            let minor = pages.flatMap { ($0["violations"] as? [[String: Any]] ?? []).map { "\($0["id"] ?? "?")" } }
            scenario.report(
                "\(steps.count) steps in \(ms(ContinuousClock.now - started)); axe-core on \(pages.count) pages: "
                    + "no serious or critical violation (others: \(Set(minor).sorted())); screenshots in \(screenshots): "
                    + "\((summary["screenshots"] as? [String] ?? []).joined(separator: ", "))")
            // The replay reached the receiver: the event twice.
            let again = ContinuousClock.now
            while receiver.deliveries.filter({ $0.id == "evt_\(event)" }).count < 2,
                ContinuousClock.now - again < .seconds(30)
            {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(receiver.deliveries.filter { $0.id == "evt_\(event)" }.count == 2, "the replayed event again")
        }
    }
}
