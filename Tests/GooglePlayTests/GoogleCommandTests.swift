import Foundation
import GooglePlay
import Ledger
import Postgres
import Receipts
import Shop
import TestSupport
import Testing

/// `shopledger google sync` and `shopledger catalog google-product` as an operator runs them: the built
/// binary, configured by `SHOPLEDGER_GOOGLE_*` variables, against the fake Google and a real PostgreSQL.
@Suite("Google Play commands: shopledger google, catalog google-product")
struct GoogleCommandTests {
    @Test("sync records a refund only the voided-purchases read knows, once; foreign flags are refused")
    func sync() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-cli", orderId: "GPA.CLI"))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("google-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await fake.run { base in
            let keyPath = folder.appendingPathComponent("service-account.json").path
            try fake.keyFileJSON(tokenURI: base + "/token").write(to: URL(fileURLWithPath: keyPath))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyPath)
            let environment = [
                "SHOPLEDGER_GOOGLE_PLAY_PACKAGE": fake.packageName, "SHOPLEDGER_GOOGLE_SERVICE_ACCOUNT_FILE": keyPath,
                "SHOPLEDGER_GOOGLE_PLAY_API_URL": base,
            ]
            try await withTestDatabase { db in
                let mapped = try await ShopLedgerRun.run(
                    [
                        "catalog", "google-product", "--kind", "face", "--index", "2", "--google-product-id", "sprout2",
                        "--actor", "ops-kim", "--reason", "sold on Google Play", "--database-url", db.url,
                    ], environment: [:])
                #expect(
                    mapped.status == 0 && mapped.output.contains("google_product #")
                        && mapped.output.contains("ops-kim")
                        && mapped.output.contains("[Google Play: sprout2]"), "\(mapped.output)")
                // The purchase as the server records it (GooglePlayTests.PlayPurchaseTests go through the route).
                let ledger = LedgerStore(client: db.client, logger: PlayTest.quietLogger)
                _ = try await ledger.register(uid: "alice", profile: try UserProfile(json: "{}"))
                let answer = try await GooglePlayClient(
                    configuration: PlayTest.configuration(fake, baseURL: base), logger: PlayTest.quietLogger
                ).productPurchase(productId: "sprout2", token: "tok-cli")
                let transaction = try GooglePlayDesk.transaction(
                    answer, packageName: fake.packageName, productId: "sprout2", token: "tok-cli")
                #expect(try await ledger.recordPurchase(transaction, for: "alice").purchase?.state == .live)

                fake.void("tok-cli", reason: 7)
                let arguments = ["google", "sync", "--since", "2026-01-01", "--database-url", db.url]
                let first = try await ShopLedgerRun.run(arguments, environment: environment)
                #expect(first.status == 0, "\(first.output)")
                #expect(first.output.contains("voids 1 (applied 1, parked 0, known 0)"), "\(first.output)")
                let second = try await ShopLedgerRun.run(arguments, environment: environment)
                #expect(second.output.contains("voids 1 (applied 0, parked 0, known 1)"), "\(second.output)")
                let refunds = try await db.client.query(
                    "SELECT count(*) FROM journal_entries WHERE transaction_id = 'GPA.CLI' AND kind = 'refund'"
                ).single().decode(Int.self, at: 0)
                #expect(refunds == 1)

                let unconfigured = try await ShopLedgerRun.run(arguments, environment: [:])
                #expect(unconfigured.status != 0 && unconfigured.output.contains("not configured"))
                for flag in [
                    ["--google-play-sync-interval", "60"], ["--google-play-push-audience", "x"], ["--port", "1"],
                ] {
                    let foreign = try await ShopLedgerRun.run(arguments + flag, environment: environment)
                    #expect(
                        foreign.status != 0 && foreign.output.contains("Unknown option"), "\(flag): \(foreign.output)")
                }
            }
        }
        #expect(fake.assertionProblems.isEmpty)
    }
}
