import Foundation
import Ledger
import Postgres
import Receipts
import TestSupport
import Testing

/// `--json` on the commands scripts call, from the built binary on a real database: standard output
/// alone is one JSON document with the documented keys and the ledger's values.
@Suite("JSON output of the command line: admin, migrate --status, report")
struct CommandJSONTests {
    /// A production App Store purchase of face 2 at ₩2,500 on 2025-10-09 (UTC).
    static let purchase: VerifiedTransaction = {
        let date = Date(timeIntervalSince1970: 1_760_000_000)
        return VerifiedTransaction(
            store: .appStore, environment: .production, transactionId: "json-1", originalTransactionId: "json-1",
            bundleId: "com.memolease.sesac1", productId: "com.memolease.sesac1.sprout2", productType: .nonConsumable,
            purchaseDate: date, originalPurchaseDate: date, signedDate: date.addingTimeInterval(5),
            priceMilli: 2_500_000, currency: "KRW", storefront: "KOR", ownershipType: .purchased,
            appAccountToken: nil, evidenceSHA256: Array(repeating: 7, count: 32))
    }()

    /// Runs `arguments` and decodes its standard output as a JSON object.
    static func json(_ arguments: [String]) async throws -> (status: Int32, object: [String: Any]) {
        let run = try await ShopLedgerRun.run(arguments, separatingErrors: true)
        let parsed = try JSONSerialization.jsonObject(with: Data(run.output.utf8))
        let object = try #require(parsed as? [String: Any], "not a JSON object: \(run.output) \(run.errors)")
        return (run.status, object)
    }

    @Test("admin lookup and history --json: the purchase, its price in milli, the support actions")
    func admin() async throws {
        try await withTestDatabase { db in
            let ledger = LedgerStore(client: db.client)
            _ = try await ledger.register(uid: "hana", profile: try UserProfile(json: #"{"nick":"새싹"}"#))
            _ = try await ledger.recordPurchase(Self.purchase, for: "hana")
            let database = ["--database-url", db.url]
            let granted = try await ShopLedgerRun.run(
                ["admin", "grant", "hana", "face", "4", "--actor", "support-park", "--reason", "charged twice"]
                    + database)
            #expect(granted.status == 0, "\(granted.output)")

            let lookup = try await Self.json(["admin", "lookup", "json-1", "--json"] + database)
            #expect(lookup.status == 0)
            #expect(lookup.object["id"] as? String == "json-1")
            let records = try #require(lookup.object["records"] as? [[String: Any]])
            #expect(records.count == 1)
            let record = try #require(records.first)
            let found = try #require(record["purchase"] as? [String: Any])
            #expect(found["transactionId"] as? String == "json-1" && record["uid"] as? String == "hana")
            let price = try #require(found["price"] as? [String: Any])
            #expect(price["amountMilli"] as? Int == 2_500_000 && price["currency"] as? String == "KRW")
            #expect((found["item"] as? [String: Any])?["index"] as? Int == 2)
            #expect(found["purchaseDate"] as? String == "2025-10-09T08:53:20.000Z", "the API's instant format")

            let missing = try await Self.json(["admin", "lookup", "no-such", "--json"] + database)
            #expect(missing.status == 1 && (missing.object["records"] as? [Any])?.isEmpty == true)

            let history = try await Self.json(["admin", "history", "hana", "--json"] + database)
            #expect(history.status == 0 && history.object["uid"] as? String == "hana")
            #expect((history.object["records"] as? [Any])?.count == 1)
            let actions = try #require(history.object["supportActions"] as? [[String: Any]])
            #expect(actions.count == 1)
            #expect(actions.first?["actor"] as? String == "support-park")
            #expect(actions.first?["reason"] as? String == "charged twice")
            #expect(actions.first?["revokedBy"] is NSNull, "an absent value is null, not a missing key")
        }
    }

    @Test("migrate --status --json: every migration applied, none pending; --json alone is refused")
    func migrateStatus() async throws {
        try await withTestDatabase { db in
            let status = try await Self.json(["migrate", "--status", "--json", "--database-url", db.url])
            #expect(status.status == 0)
            let migrations = try #require(status.object["migrations"] as? [[String: Any]])
            #expect(!migrations.isEmpty && migrations.allSatisfy { $0["state"] as? String == "applied" })
            #expect(status.object["applied"] as? Int == migrations.count && status.object["pending"] as? Int == 0)
            #expect(migrations.first?["version"] as? Int == 1 && migrations.first?["applied_at"] is String)
            // Each says whether it is additive, as its file's header does (0016 is not, 0017 is).
            let additive = Dictionary(
                uniqueKeysWithValues: migrations.compactMap { m in
                    (m["name"] as? String).map { ($0, m["additive"] as? Bool) }
                })
            #expect(additive["0016_webhooks.sql"] == false && additive["0017_catalog_admin.sql"] == true)
            #expect(status.object["newer"] as? Int == 0 && status.object["runnable"] as? Bool == true)
            let refused = try await ShopLedgerRun.run(["migrate", "--json", "--database-url", db.url])
            #expect(refused.status != 0)
        }
    }

    @Test("migrate --status after a newer release: the list with the newer migrations, then a refusal naming it")
    func migrateStatusNewer() async throws {
        try await withTestDatabase { db in
            // A newer release applied one additive migration, then one that is not.
            try await db.client.execute(
                """
                INSERT INTO schema_migrations (version, name, checksum, additive, release)
                VALUES (9001, '9001_newer_index.sql', 'x', true, '7.1.0'),
                       (9002, '9002_newer_rename.sql', 'x', false, '7.2.0')
                """)
            let status = try await Self.json(["migrate", "--status", "--json", "--database-url", db.url])
            #expect(status.status != 0)
            let migrations = try #require(status.object["migrations"] as? [[String: Any]])
            let newer = migrations.filter { $0["state"] as? String == "newer" }
            #expect(newer.map { $0["name"] as? String } == ["9001_newer_index.sql", "9002_newer_rename.sql"])
            #expect(newer.map { $0["applied_by"] as? String } == ["7.1.0", "7.2.0"])
            #expect(status.object["newer"] as? Int == 2 && status.object["runnable"] as? Bool == false)

            let text = try await ShopLedgerRun.run(["migrate", "--status", "--database-url", db.url])
            #expect(text.status != 0)
            #expect(text.output.contains("newer    not additive  9002_newer_rename.sql at "), "\(text.output)")
            #expect(text.output.contains("by shopledger 7.2.0"), "\(text.output)")
            #expect(text.output.contains("run shopledger 7.2.0 or newer"), "\(text.output)")
        }
    }

    @Test("report daily --json: the files written and the day's figures, reconciled")
    func report() async throws {
        try await withTestDatabase { db in
            let ledger = LedgerStore(client: db.client)
            _ = try await ledger.register(uid: "hana", profile: try UserProfile(json: #"{"nick":"새싹"}"#))
            _ = try await ledger.recordPurchase(Self.purchase, for: "hana")
            let out = FileManager.default.temporaryDirectory.appendingPathComponent("json-report-\(UUID())").path
            defer { try? FileManager.default.removeItem(atPath: out) }
            let report = try await Self.json(
                ["report", "daily", "--date", "2025-10-09", "--out", out, "--json", "--database-url", db.url])
            #expect(report.status == 0)
            #expect(report.object["reconciled"] as? Bool == true)
            let asOf = try #require(report.object["data_as_of"] as? String)
            #expect(ISO8601DateFormatter().date(from: asOf) != nil, "data_as_of is ISO 8601: \(asOf)")
            let files = try #require(report.object["files"] as? [String])
            #expect(!files.isEmpty && files.allSatisfy { FileManager.default.fileExists(atPath: $0) })
            let periods = try #require(report.object["periods"] as? [[String: Any]])
            #expect(periods.count == 1 && periods.first?["first_day"] as? String == "2025-10-09")
            let lines = try #require(periods.first?["lines"] as? [[String: Any]])
            let krw = lines.filter { $0["currency"] as? String == "KRW" && $0["level"] as? String == "currency" }
            #expect(krw.count == 1, "one KRW total: \(lines)")
            #expect(krw.first?["net_milli"] as? Int == 2_500_000, "\(krw)")
            // Every key of a line, always there (null where there is no value), as configuration.md lists them.
            #expect(
                Set(krw.first?.keys.map { $0 } ?? [])
                    == [
                        "book", "currency", "level", "kind", "index", "purchases", "gross_milli", "refunds",
                        "refunded_milli", "reversals", "reversed_milli", "net_milli", "commission_milli",
                        "proceeds_milli", "buyers", "first_time_buyers", "refund_rate_units_percent",
                        "refund_rate_amount_percent", "arppu_milli",
                    ], "\(krw)")
            // The operator figures: refund rates and ARPPU on the line, storefronts, the trailing windows.
            #expect(krw.first?["refund_rate_units_percent"] as? String == "0.0", "\(krw)")
            #expect(krw.first?["arppu_milli"] as? Int == 2_500_000, "one paying user: \(krw)")
            let storefronts = try #require(periods.first?["storefronts"] as? [[String: Any]])
            #expect(storefronts.count == 1 && storefronts.first?["storefront"] as? String == "KOR", "\(storefronts)")
            #expect(storefronts.first?["net_milli"] as? Int == 2_500_000, "\(storefronts)")
            // The same lines per store, each naming its store (issue 43: reports by store).
            let stores = try #require(periods.first?["stores"] as? [[String: Any]])
            let appStore = stores.filter { $0["level"] as? String == "currency" }
            #expect(appStore.count == 1 && appStore.first?["store"] as? String == "app_store", "\(stores)")
            #expect(appStore.first?["net_milli"] as? Int == 2_500_000 && appStore.first?["buyers"] as? Int == 1)
            #expect(
                Set(appStore.first?.keys.map { $0 } ?? []) == Set(krw.first?.keys.map { $0 } ?? []).union(["store"]))
            let trailing = try #require(report.object["trailing"] as? [[String: Any]])
            #expect(trailing.map { $0["days"] as? Int } == [7, 30, 90], "\(trailing)")
            #expect(report.object["converted"] is NSNull && report.object["apple_says"] is NSNull)

            // Apple's report of the same (Pacific) day imported: the daily report's JSON carries the comparison.
            let file = out + "-apple.txt"
            defer { try? FileManager.default.removeItem(atPath: file) }
            try """
            Provider\tSKU\tProduct Type Identifier\tUnits\tDeveloper Proceeds\tBegin Date\tEnd Date\tCustomer Currency\tCountry Code\tCurrency of Proceeds\tCustomer Price
            APPLE\tcom.memolease.sesac1.sprout2\tIA1\t1\t1750\t10/09/2025\t10/09/2025\tKRW\tKR\tKRW\t2500

            """.write(toFile: file, atomically: true, encoding: .utf8)
            let imported = try await ShopLedgerRun.run(["apple", "sales", "import", file, "--database-url", db.url])
            #expect(imported.status == 0, "\(imported.output)")
            let withApple = try await Self.json(
                ["report", "daily", "--date", "2025-10-09", "--out", out, "--json", "--database-url", db.url])
            let apple = try #require(withApple.object["apple_says"] as? [String: Any], "\(withApple.object)")
            #expect(apple["matched"] as? Int == 1 && apple["passed"] as? Bool == true, "\(apple)")
            #expect((apple["discrepancies"] as? [Any])?.isEmpty == true, "\(apple)")
        }
    }
}
