import Foundation
import Ledger
import Receipts
import TestSupport
import Testing

/// `report … --reporting-currency --fx-rates` from the built binary on a real database: a report
/// that cannot be converted is refused with exit status 1 and no file written; the two options go together.
@Suite("report --reporting-currency on the command line")
struct ReportingCurrencyCommandTests {
    static func withRates<R>(_ text: String, _ body: (String, String) async throws -> R) async throws -> R {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fx-cli-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let rates = folder + "/rates.csv"
        try Data(text.utf8).write(to: URL(fileURLWithPath: rates))
        return try await body(rates, folder + "/out")
    }

    @Test("no rate on or before a day with revenue: exit 1, the date and currency said, nothing written")
    func missingRateWritesNothing() async throws {
        try await withTestDatabase { db in
            let ledger = LedgerStore(client: db.client)
            _ = try await ledger.register(uid: "hana", profile: try UserProfile(json: #"{"nick":"새싹"}"#))
            _ = try await ledger.recordPurchase(CommandJSONTests.purchase, for: "hana")  // 2025-10-09, ₩2,500
            let header = "date,currency,rate_per_unit_of_reporting_currency\n"
            try await Self.withRates(header + "2025-10-10,KRW,1391.25\n") { rates, out in
                let run = try await ShopLedgerRun.run([
                    "report", "daily", "--date", "2025-10-09", "--out", out, "--reporting-currency", "USD",
                    "--fx-rates", rates, "--database-url", db.url,
                ])
                #expect(run.status == 1, "\(run.output)")
                #expect(run.output.contains("no rate of KRW (per USD) on or before 2025-10-09"), "\(run.output)")
                #expect(!FileManager.default.fileExists(atPath: out), "a refused report wrote \(out)")
            }
            try await Self.withRates(header + "2025-10-09,KRW,1391.2x\n") { rates, out in
                let run = try await ShopLedgerRun.run([
                    "report", "daily", "--date", "2025-10-09", "--out", out, "--reporting-currency", "USD",
                    "--fx-rates", rates, "--database-url", db.url,
                ])
                #expect(run.status == 1, "\(run.output)")
                #expect(run.output.contains("rates.csv line 2, column 16: rate '1391.2x'"), "\(run.output)")
                #expect(!FileManager.default.fileExists(atPath: out))
            }
            try await Self.withRates(header + "2025-10-09,KRW,1391.25\n") { rates, out in
                let run = try await ShopLedgerRun.run([
                    "report", "daily", "--date", "2025-10-09", "--out", out, "--reporting-currency", "USD",
                    "--fx-rates", rates, "--format", "md", "--database-url", db.url,
                ])
                #expect(run.status == 0, "\(run.output)")
                let markdown = try String(contentsOfFile: out + "/2025-10-09/revenue.md", encoding: .utf8)
                // 2,500,000 / 1391.25 = 1796.9451... → 1797 USD milli, shown as 1.797.
                #expect(markdown.contains("## In USD") && markdown.contains("1.797"), "\(markdown)")
                // --json carries the same converted figures, in USD milliunits.
                let json = try await ShopLedgerRun.run(
                    [
                        "report", "daily", "--date", "2025-10-09", "--out", out, "--reporting-currency", "USD",
                        "--fx-rates", rates, "--format", "md", "--json", "--database-url", db.url,
                    ], separatingErrors: true)
                #expect(json.status == 0, "\(json.output) \(json.errors)")
                let object = try #require(
                    try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any], "\(json.output)")
                let converted = try #require(object["converted"] as? [String: Any], "\(object)")
                let periods = try #require(converted["periods"] as? [[String: Any]])
                #expect(converted["currency"] as? String == "USD" && periods.first?["gross_milli"] as? Int == 1797)
                let alone = try await ShopLedgerRun.run([
                    "report", "daily", "--date", "2025-10-09", "--out", out, "--fx-rates", rates,
                    "--database-url", db.url,
                ])
                #expect(alone.status != 0 && alone.output.contains("--fx-rates needs --reporting-currency"))
                let code = try await ShopLedgerRun.run([
                    "report", "range", "--from", "2025-10-09", "--to", "2025-10-09", "--out", out,
                    "--reporting-currency", "US", "--fx-rates", rates, "--database-url", db.url,
                ])
                #expect(code.status != 0 && code.output.contains("not a 3-letter currency code"))
            }
        }
    }
}
