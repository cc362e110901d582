import Crypto
import Foundation
import HummingbirdTesting
import Postgres
import TestSupport
import Testing

/// `shopledger apple sales fetch` as an operator runs it: the built binary, configured by
/// `SHOPLEDGER_APP_STORE_CONNECT_*` variables, against the fake App Store Connect API and a real PostgreSQL.
@Suite("AppStoreServerAPI: shopledger apple sales fetch")
struct AppleSalesFetchCommandTests {
    /// A one-row 1_0 Summary Sales Report of 2026-11-25: one sprout face sold in Korea.
    static let reportText = """
        Provider\tProvider Country\tSKU\tDeveloper\tTitle\tVersion\tProduct Type Identifier\tUnits\tDeveloper Proceeds\tBegin Date\tEnd Date\tCustomer Currency\tCountry Code\tCurrency of Proceeds\tApple Identifier\tCustomer Price\tPromo Code\tParent Identifier\tSubscription\tPeriod\tCategory\tCMB\tDevice\tSupported Platforms
        APPLE\tUS\tcom.memolease.sesac1.sprout1\tMemolease\t튼튼 새싹\t\tIA1\t1\t840\t11/25/2026\t11/25/2026\tKRW\tKR\tKRW\t6450000001\t1200\t\tcom.memolease.sesac1\t\t\tEducation\t\tiPhone\tiOS

        """

    /// `text` gzip'd by Debian's gzip (`-n`: no name or time in the header, so the bytes are the same each run).
    static func gzip(_ text: String) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/gzip")
        process.arguments = ["-n", "-c"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data(text.utf8))
        try input.fileHandleForWriting.close()
        let bytes = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Array(bytes)
    }

    static func environment(_ fake: FakeAppStoreConnect, base: String, folder: URL) throws -> [String: String] {
        let keyPath = folder.appendingPathComponent("AuthKey_connect.p8").path
        try fake.apiKey.pemRepresentation.write(toFile: keyPath, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyPath)
        return [
            "SHOPLEDGER_APP_STORE_CONNECT_KEY_FILE": keyPath, "SHOPLEDGER_APP_STORE_CONNECT_KEY_ID": fake.keyId,
            "SHOPLEDGER_APP_STORE_CONNECT_ISSUER_ID": fake.issuerId,
            "SHOPLEDGER_APPLE_VENDOR_NUMBER": fake.vendorNumber, "SHOPLEDGER_APP_STORE_CONNECT_URL": base,
        ]
    }

    @Test("fetch imports the day's report once, keeps Apple's file with --save, records no sales, waits for not yet")
    func fetch() async throws {
        let fake = FakeAppStoreConnect()
        let gzip = try Self.gzip(Self.reportText)
        fake.add(report: gzip, for: "2026-11-25")
        fake.noSales(on: "2026-11-24")
        let folder = try AppStoreCommandTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await fake.run { base in
            let environment = try Self.environment(fake, base: base, folder: folder)
            try await withTestDatabase { db in
                let saved = folder.appendingPathComponent("reports").path
                let fetch = ["apple", "sales", "fetch", "--database-url", db.url]
                let first = try await ShopLedgerRun.run(
                    fetch + ["--date", "2026-11-25", "--save", saved], environment: environment)
                try #require(first.status == 0, "\(first.output)")
                let name = "S_D_\(fake.vendorNumber)_20261125.txt.gz"
                #expect(first.output.contains(name), "\(first.output)")
                let kept = try Data(contentsOf: URL(fileURLWithPath: saved).appendingPathComponent(name))
                #expect(Array(kept) == gzip, "the file is kept byte for byte as served")
                let (reports, units) = try await db.client.query(
                    """
                    SELECT count(DISTINCT r.report_id)::int, sum(w.units)::int
                    FROM apple_sales_reports r JOIN apple_sales_report_rows w USING (report_id)
                    WHERE r.report_date = '2026-11-25'
                    """
                ).single().decode((Int, Int).self)
                #expect(reports == 1 && units == 1)

                let again = try await ShopLedgerRun.run(fetch + ["--date", "2026-11-25"], environment: environment)
                #expect(again.status == 0 && again.output.contains("already imported"), "\(again.output)")
                let count = try await db.client.query("SELECT count(*)::int FROM apple_sales_reports").single()
                    .decode(Int.self, at: 0)
                #expect(count == 1)

                let none = try await ShopLedgerRun.run(fetch + ["--date", "2026-11-24"], environment: environment)
                #expect(none.status == 0 && none.output.contains("There were no sales"), "\(none.output)")
                #expect(none.output.contains("no sales on 2026-11-24: recorded"), "\(none.output)")
                // Recorded: the day is compared (an empty ledger matches Apple's zero), not "no report" (2).
                let compared = try await ShopLedgerRun.run(
                    ["reconcile", "apple", "--date", "2026-11-24", "--database-url", db.url])
                #expect(compared.status == 0, "\(compared.output)")
                let noneAgain = try await ShopLedgerRun.run(
                    fetch + ["--date", "2026-11-24"], environment: environment)
                #expect(noneAgain.status == 0 && noneAgain.output.contains("already recorded"), "\(noneAgain.output)")
                let later = try await ShopLedgerRun.run(fetch + ["--date", "2026-11-26"], environment: environment)
                #expect(later.status == 75 && later.output.contains("not available yet"), "\(later.output)")
                fake.script(.rateLimited)
                let limited = try await ShopLedgerRun.run(fetch + ["--date", "2026-11-25"], environment: environment)
                #expect(limited.status == 75 && limited.output.contains("rate limit"), "\(limited.output)")
                fake.script(.status(403, detail: "The API key in use does not allow this request"))
                let forbidden = try await ShopLedgerRun.run(
                    fetch + ["--date", "2026-11-25"], environment: environment)
                #expect(forbidden.status == 1 && forbidden.output.contains("does not allow"), "\(forbidden.output)")

                var missing = environment
                missing["SHOPLEDGER_APPLE_VENDOR_NUMBER"] = nil
                let unconfigured = try await ShopLedgerRun.run(fetch + ["--date", "2026-11-25"], environment: missing)
                #expect(unconfigured.status != 0 && unconfigured.output.contains("--vendor-number"))
            }
        }
        #expect(fake.requests.allSatisfy { $0.tokenProblem == nil })
        #expect(fake.requests.count == 7, "the unconfigured run sends nothing")
    }
}
