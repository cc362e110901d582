import Foundation
import Ledger
import TestSupport
import Testing

@testable import AppleSales

/// The built `shopledger` binary, end to end: `apple sales import` and `reconcile apple`, and
/// `reconcile` without a subcommand still the ledger's invariants.
@Suite("shopledger apple sales import and reconcile apple")
struct AppleCommandTests {
    @Test("import several files (one refused), then reconcile apple: exit statuses and wording")
    func endToEnd() async throws {
        try await withSalesLedger("apple_cli") { db, ledger in
            try await AppleSalesComparisonTests.recordDay(ledger)
            var generator = try await SalesReportGenerator.fromLedger(
                db.client, date: AppleSalesComparisonTests.day, layout: .v1_0)
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("apple-cli-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let good = folder.appendingPathComponent("S_D_80012345_20250309.txt.gz").path
            let bad = folder.appendingPathComponent("bad.txt").path
            #expect(FileManager.default.createFile(atPath: good, contents: Data(generator.gzipped())))
            #expect(
                FileManager.default.createFile(
                    atPath: bad, contents: Data(SummarySalesParserTests.corrupt("Units", to: "three"))))
            let database = ["--database-url", db.url]

            let imported = try await ShopLedgerRun.run(["apple", "sales", "import", good, bad, good] + database)
            #expect(imported.status == 1, "\(imported.output)")
            #expect(imported.output.contains("S_D_80012345_20250309.txt.gz: imported 2025-03-09"), "\(imported.output)")
            #expect(imported.output.contains("S_D_80012345_20250309.txt.gz: already imported 2025-03-09"))
            #expect(
                imported.output.contains(
                    "bad.txt: refused, nothing stored: line 3, column 8 'Units': 'three' is not a whole number"),
                "\(imported.output)")
            #expect(try await importedCounts(db.client) == [1, generator.rows.count])

            let matched = try await ShopLedgerRun.run(["reconcile", "apple", "--date", "2025-03-09"] + database)
            #expect(matched.status == 0, "\(matched.output)")
            #expect(matched.output.contains("Matched: 4") && matched.output.contains("Discrepancies: 0"))

            generator.rows.removeAll { $0.countryCode == "JP" }
            let newer = folder.appendingPathComponent("newer.txt").path
            #expect(FileManager.default.createFile(atPath: newer, contents: Data(generator.text())))
            let second = try await ShopLedgerRun.run(["apple", "sales", "import", newer] + database)
            #expect(second.status == 0 && second.output.contains("supersedes"), "\(second.output)")
            let differs = try await ShopLedgerRun.run(
                ["reconcile", "apple", "--date", "2025-03-09", "--json"] + database, separatingErrors: true)
            #expect(differs.status == 1, "\(differs.output)")
            let json = try #require(
                try JSONSerialization.jsonObject(with: Data(differs.output.utf8)) as? [String: Any])
            let lines = try #require(json["discrepancies"] as? [[String: Any]])
            #expect(
                lines.count == 1 && lines.first?["country"] as? String == "JP"
                    && lines.first?["kind"] as? String == "ledger_only")

            let none = try await ShopLedgerRun.run(["reconcile", "apple", "--date", "2025-03-10"] + database)
            #expect(
                none.status == 2 && none.output.contains("no Summary Sales Report for 2025-03-10"), "\(none.output)")

            let invariants = try await ShopLedgerRun.run(["reconcile", "--max-failures", "5", "--json"] + database)
            #expect(invariants.status == 0, "\(invariants.output)")
            #expect(invariants.output.contains("\"checks\""))
            let help = try await ShopLedgerRun.run(["reconcile", "--help"])
            #expect(help.output.contains("append_only_enforced") && help.output.contains("apple"), "\(help.output)")
        }
    }
}
