import Crypto
import Foundation
import HummingbirdTesting
import Postgres
import Receipts
import ShopServer
import TestSupport
import Testing

/// The `shopledger appstore` commands as an operator runs them: the built binary, configured by
/// `SHOPLEDGER_APP_STORE_*` variables, against the fake Apple (and, for sync, a real PostgreSQL).
@Suite("AppStoreServerAPI commands: shopledger appstore")
struct AppStoreCommandTests {
    /// Runs the built binary (`ShopLedgerRun`).
    static func shopledger(_ arguments: [String], environment: [String: String]) async throws -> ShopLedgerRun {
        try await ShopLedgerRun.run(arguments, environment: environment)
    }

    /// The key and the trust root as files, and the variables that configure the API.
    static func settings(
        _ fake: FakeAppStore, production: String, sandbox: String, folder: URL
    ) throws -> (
        [String: String], [String]
    ) {
        let keyPath = folder.appendingPathComponent("AuthKey.p8").path
        let rootPath = folder.appendingPathComponent("root.der").path
        try fake.apiKey.pemRepresentation.write(toFile: keyPath, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyPath)
        try Data(TestPKI.der(APITest.pki.root)).write(to: URL(fileURLWithPath: rootPath))
        let environment = [
            "SHOPLEDGER_APP_STORE_KEY_FILE": keyPath, "SHOPLEDGER_APP_STORE_KEY_ID": fake.keyId,
            "SHOPLEDGER_APP_STORE_ISSUER_ID": fake.issuerId, "SHOPLEDGER_APP_STORE_PRODUCTION_URL": production,
            "SHOPLEDGER_APP_STORE_SANDBOX_URL": sandbox,
        ]
        return (environment, ["--root-cert", rootPath, "--bundle-id", APITest.bundleId])
    }

    static func temporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("appstore-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test("lookup-order prints the order's verified transactions; an unknown order and no configuration fail")
    func lookupOrder() async throws {
        let fake = APITest.fake()
        fake.add(FakeAppStore.Transaction(id: "7701", productId: APITest.product(2), customer: "a", price: 2_500_000))
        fake.addOrder("MQ5LXY2K3P", transactions: ["7701"])
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await fake.run { production, sandbox in
            let (environment, options) = try Self.settings(
                fake, production: production, sandbox: sandbox, folder: folder)
            let found = try await Self.shopledger(
                ["appstore", "lookup-order", "MQ5LXY2K3P"] + options, environment: environment)
            #expect(found.status == 0, "\(found.output)")
            #expect(found.output.contains("valid, Production") && found.output.contains("7701 \(APITest.product(2))"))
            #expect(found.output.contains("2500000 milli KRW"))

            let unknown = try await Self.shopledger(
                ["appstore", "lookup-order", "NOPE"] + options, environment: environment)
            #expect(unknown.status == 1 && unknown.output.contains("invalid"))

            let unconfigured = try await Self.shopledger(
                ["appstore", "lookup-order", "MQ5LXY2K3P"] + options, environment: [:])
            #expect(unconfigured.status != 0 && unconfigured.output.contains("not configured"))
            // Only its own options: serve's HTTP settings mean nothing here and are refused.
            for flag in [["--port", "8080"], ["--dev-auth"], ["--app-store-sync-interval", "60"]] {
                let foreign = try await Self.shopledger(
                    ["appstore", "lookup-order", "MQ5LXY2K3P"] + flag + options, environment: environment)
                #expect(foreign.status != 0 && foreign.output.contains("Unknown option"), "\(flag): \(foreign.output)")
            }
            #expect(fake.requests.allSatisfy { $0.tokenProblem == nil })
        }
    }

    @Test("sync stores a missed notification and applies its refund once; the second run finds nothing new")
    func sync() async throws {
        let fake = APITest.fake()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        fake.add(FakeAppStore.Transaction(id: "7801", productId: APITest.product(2), customer: "a"))
        fake.add(
            FakeAppStore.Notification(
                uuid: "cli-missed", type: "REFUND", signedDateMs: now - 60_000, transactionId: "7801"))
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await fake.run { production, sandbox in
            let (environment, options) = try Self.settings(
                fake, production: production, sandbox: sandbox, folder: folder)
            try await withTestDatabase { db in
                let arguments = ["appstore", "sync", "--since", "2026-01-01", "--database-url", db.url] + options
                let first = try await Self.shopledger(arguments, environment: environment)
                #expect(first.status == 0, "\(first.output)")
                #expect(first.output.contains("notifications: 1 seen, 1 new, 1 applied"), "\(first.output)")
                // 2026-01-01 is older than either environment keeps: asked from their windows, a warning each.
                for environment in ["Production", "Sandbox"] {
                    #expect(first.output.contains("warning: notification history (\(environment))"), "\(first.output)")
                }
                // What Apple failed to deliver and this run stored, with Apple's last attempt.
                #expect(first.output.contains("cli-missed REFUND Production TIMED_OUT"), "\(first.output)")
                let second = try await Self.shopledger(arguments, environment: environment)
                #expect(
                    second.status == 0 && second.output.contains("notifications: 1 seen, 0 new, 0 applied"),
                    "\(second.output)")
                let stored = try await db.client.query(
                    "SELECT count(*) FROM store_notifications WHERE notification_uuid = 'cli-missed'"
                ).single().decode(Int.self, at: 0)
                let events = try await db.client.query(
                    "SELECT count(*) FROM refund_events WHERE source_event_id = 'cli-missed'"
                ).single().decode(Int.self, at: 0)
                #expect(stored == 1 && events == 1)

                // --json: the same run's report for scripts, on standard output alone.
                let json = try await ShopLedgerRun.run(
                    arguments + ["--json"], environment: environment, separatingErrors: true)
                #expect(json.status == 0, "\(json.output) \(json.errors)")
                let report = try #require(
                    try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any], "\(json.output)")
                #expect(report["notifications_seen"] as? Int == 1 && report["notifications_stored"] as? Int == 0)
                #expect(report["failures"] as? Int == 0 && (report["failed"] as? [Any])?.isEmpty == true)
                #expect((report["warnings"] as? [String])?.count == 2, "a warning per environment: \(report)")
            }
        }
    }

    @Test("sync with the sandbox's history failing: exit 1 naming it; production's notification is stored")
    func syncReportsFailedEnvironment() async throws {
        let fake = APITest.fake()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        fake.add(FakeAppStore.Transaction(id: "7901", productId: APITest.product(2), customer: "a"))
        fake.add(
            FakeAppStore.Notification(
                uuid: "cli-kept", type: "REFUND", signedDateMs: now - 60_000, transactionId: "7901"))
        // Every attempt of the client's default four.
        fake.script(.status(500, errorCode: nil), times: 4, for: .notificationHistory(in: .sandbox))
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await fake.run { production, sandbox in
            let (environment, options) = try Self.settings(
                fake, production: production, sandbox: sandbox, folder: folder)
            try await withTestDatabase { db in
                let since = ISO8601DateFormatter().string(from: Date().addingTimeInterval(-86_400))
                let run = try await Self.shopledger(
                    ["appstore", "sync", "--since", since, "--database-url", db.url] + options, environment: environment
                )
                #expect(run.status == 1, "\(run.output)")
                #expect(run.output.contains("failed: notification history (Sandbox): api_error"), "\(run.output)")
                #expect(!run.output.contains("warning:"), "\(run.output)")
                let stored = try await db.client.query(
                    "SELECT count(*) FROM store_notifications WHERE notification_uuid = 'cli-kept'"
                ).single().decode(Int.self, at: 0)
                #expect(stored == 1, "\(run.output)")
            }
        }
    }

    @Test("test-notification says so once Apple's TEST notification is in our inbox; exit 1 when it never comes")
    func testNotification() async throws {
        let fake = APITest.fake()
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await fake.run { production, sandbox in
            let (environment, options) = try Self.settings(
                fake, production: production, sandbox: sandbox, folder: folder)
            try await withTestDatabase { db in
                // Our server, live, on the same database: Apple (the fake) posts the notification to it.
                let shop = ServerConfiguration(
                    auth: AuthConfiguration(acceptsDevelopmentTokens: true),
                    receipts: VerifierConfiguration(
                        bundleId: APITest.bundleId, rootCertificates: [APITest.pki.rootCertificate]))
                let app = try buildApplication(configuration: shop, client: db.client, logger: APITest.quietLogger)
                try await app.test(.live) { client in
                    let arguments =
                        ["appstore", "test-notification", "--wait", "3", "--database-url", db.url] + options
                    let lost = try await Self.shopledger(arguments, environment: environment)
                    #expect(
                        lost.status == 1 && lost.output.contains("did not reach our notification inbox"),
                        "\(lost.output)")

                    fake.deliverTestNotifications(to: "http://127.0.0.1:\(client.port!)/api/v1/notifications/app-store")
                    let arrived = try await Self.shopledger(arguments, environment: environment)
                    #expect(
                        arrived.status == 0 && arrived.output.contains("arrived at our endpoint"), "\(arrived.output)")
                }
            }
        }
    }
}
