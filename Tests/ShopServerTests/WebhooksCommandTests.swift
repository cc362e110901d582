import Foundation
import Postgres
import TestSupport
import Testing

/// `shopledger webhooks add|list|disable|replay|show` as an operator runs them: the built binary on a
/// real database.
@Suite("Webhook endpoints on the command line: shopledger webhooks")
struct WebhooksCommandTests {
    @Test("add with a secret file, list, replay, show, disable; refusals write nothing")
    func commands() async throws {
        try await withTestDatabase { db in
            let database = ["--database-url", db.url]
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("webhooks-\(UUID())").path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let secretFile = folder + "/secret"
            try "whsec_0123456789abcdef0123456789\n".write(toFile: secretFile, atomically: true, encoding: .utf8)

            let open = try await ShopLedgerRun.run(
                ["webhooks", "add", "https://hooks.example.com/a", "--secret-file", secretFile] + database)
            #expect(open.status != 0 && open.output.contains("chmod 600"), "a readable secret file is refused")
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secretFile)

            let plain = try await ShopLedgerRun.run(
                ["webhooks", "add", "http://hooks.example.com/a", "--secret-file", secretFile] + database)
            #expect(plain.status != 0 && plain.output.contains("must be https"), "\(plain.output)")
            let added = try await ShopLedgerRun.run(
                [
                    "webhooks", "add", "https://hooks.example.com/a", "--secret-file", secretFile, "--events",
                    "support.granted", "--actor", "ops-kim",
                ] + database)
            #expect(
                added.status == 0 && added.output.contains("endpoint 1 https://hooks.example.com/a"), "\(added.output)")

            try await db.client.execute("INSERT INTO users (uid, profile) VALUES ('hana', '{}')")
            try await db.client.execute(
                """
                INSERT INTO support_actions (kind, uid, item_kind, item_index, actor, reason)
                VALUES ('grant', 'hana', 'face', 2, 'kim', 'outage')
                """)
            let listed = try await ShopLedgerRun.run(["webhooks", "list", "--json"] + database)
            #expect(listed.status == 0 && !listed.output.contains("whsec_"), "\(listed.output)")
            #expect(listed.output.contains("\"pending\" : 1"), "\(listed.output)")

            let shown = try await ShopLedgerRun.run(["webhooks", "show", "evt_1"] + database)
            #expect(shown.status == 0 && shown.output.contains(#""type":"support.granted""#), "\(shown.output)")
            let replayed = try await ShopLedgerRun.run(
                ["webhooks", "replay", "--from", "2000-01-01T00:00:00Z", "--to", "2100-01-01T00:00:00Z"] + database)
            #expect(replayed.status == 0 && replayed.output.contains("queued 0"), "\(replayed.output)")
            let badRange = try await ShopLedgerRun.run(["webhooks", "replay", "--from", "x", "--to", "y"] + database)
            #expect(
                badRange.status == 64 && badRange.output.contains("--from must be an ISO 8601"), "\(badRange.output)")
            let typesWithEvent = try await ShopLedgerRun.run(
                ["webhooks", "replay", "--event", "evt_1", "--events", "refund.applied"] + database)
            #expect(
                typesWithEvent.status == 64 && typesWithEvent.output.contains("--events goes with --from and --to"),
                "\(typesWithEvent.output)")

            let disabled = try await ShopLedgerRun.run(["webhooks", "disable", "1"] + database)
            #expect(disabled.status == 0 && disabled.output.contains("disabled"), "\(disabled.output)")
            // Destinations: public only; loopback with --webhook-allow-loopback or its variable.
            let metadata = try await ShopLedgerRun.run(
                ["webhooks", "add", "https://169.254.169.254/latest", "--secret-file", secretFile] + database)
            #expect(metadata.status != 0 && metadata.output.contains("link-local"), "\(metadata.output)")
            let loopback = try await ShopLedgerRun.run(
                ["webhooks", "add", "http://127.0.0.1:9000/hooks", "--secret-file", secretFile] + database)
            #expect(
                loopback.status != 0 && loopback.output.contains("--webhook-allow-loopback"), "\(loopback.output)")
            let optedIn = try await ShopLedgerRun.run(
                [
                    "webhooks", "add", "http://127.0.0.1:9000/hooks", "--secret-file", secretFile,
                    "--webhook-allow-loopback",
                ]
                    + database)
            #expect(optedIn.status == 0 && optedIn.output.contains("endpoint 2"), "\(optedIn.output)")
            let byVariable = try await ShopLedgerRun.run(
                ["webhooks", "add", "http://localhost:9000/hooks", "--secret-file", secretFile] + database,
                environment: ["SHOPLEDGER_WEBHOOK_ALLOW_LOOPBACK": "1"])
            #expect(byVariable.status == 0 && byVariable.output.contains("endpoint 3"), "\(byVariable.output)")
            let private10 = try await ShopLedgerRun.run(
                ["webhooks", "add", "https://10.0.0.1/hooks", "--secret-file", secretFile, "--webhook-allow-loopback"]
                    + database)
            #expect(private10.status != 0 && private10.output.contains("private"), "\(private10.output)")

            let count = try await db.client.query("SELECT count(*) FROM webhook_endpoints").single()
                .decode(Int.self, at: 0)
            #expect(count == 3)
        }
    }
}
