import CivilDates
import Foundation
import Ledger
import Postgres
import TestSupport
import Testing

@testable import AppleSales

@Suite("Importing Apple's Summary Sales Reports")
struct AppleSalesImportTests {
    static var report: SalesReportGenerator { SummarySalesParserTests.report() }

    @Test("the rows are stored as Apple sent them, amounts in milliunits")
    func stored() async throws {
        try await withSalesLedger("apple_stored") { db, _ in
            let outcome = try await AppleSalesImporter(client: db.client).importReport(
                bytes: Self.report.gzipped(), fileName: "/tmp/reports/S_D_80012345_20250309.txt.gz")
            #expect(outcome.status == .imported && outcome.rows == 3 && outcome.formatVersion == "1_3")
            #expect(outcome.fileName == "S_D_80012345_20250309.txt.gz", "the base name is stored")
            #expect(outcome.date == SummarySalesParserTests.date && outcome.earlierReportsForDate.isEmpty)
            let rows = try await db.client.query(
                """
                SELECT concat_ws(' ', line, sku, product_type, units, customer_price_milli, customer_currency,
                    country_code, developer_proceeds_milli, proceeds_currency)
                FROM apple_sales_report_rows ORDER BY line
                """
            ).map { try $0.decode(String.self, at: 0) }
            #expect(
                rows == [
                    "2 com.memolease.sesac1.sprout2 IA1 3 1200000 KRW KR 840000 KRW",
                    "3 com.memolease.sesac1.sprout3 IA1 -1 -990 USD US -693 USD",
                    "4 com.memolease.sesac1.sprout2 IA3 2 0 JPY JP 0 JPY",
                ])
            let (date, version, sha) = try await db.client.query(
                "SELECT report_date::text, format_version, encode(content_sha256, 'hex') FROM apple_sales_reports"
            ).single().decode((String, String, String).self)
            #expect(date == "2025-03-09" && version == "1_3" && sha == outcome.sha256)
        }
    }

    @Test("the same content twice (gzip'd, then plain) is stored once; the second says already imported")
    func sameFileTwice() async throws {
        try await withSalesLedger("apple_twice") { db, _ in
            let importer = AppleSalesImporter(client: db.client)
            let first = try await importer.importReport(bytes: Self.report.gzipped(), fileName: "a.txt.gz")
            let second = try await importer.importReport(bytes: Self.report.text(), fileName: "a.txt")
            #expect(first.status == .imported)
            #expect(second.status == .alreadyImported && second.reportId == first.reportId)
            #expect(second.summary.contains("already imported"), "\(second.summary)")
            #expect(try await importedCounts(db.client) == [1, 3])
        }
    }

    @Test("a refused file stores nothing, and the next good file still imports")
    func refusedStoresNothing() async throws {
        try await withSalesLedger("apple_refused") { db, _ in
            let importer = AppleSalesImporter(client: db.client)
            let zipped = Self.report.gzipped()
            for bytes in [
                SummarySalesParserTests.corrupt("Units", to: "many"),
                SummarySalesParserTests.corrupt("Begin Date", to: "13/01/2025"),
                SummarySalesParserTests.corrupt("Customer Price", to: "1.2345"),
                Array(zipped.prefix(zipped.count / 2)),
            ] {
                await #expect(throws: AppleSalesError.self) {
                    try await importer.importReport(bytes: bytes, fileName: "bad.txt")
                }
                #expect(try await importedCounts(db.client) == [0, 0])
            }
            let bounded = AppleSalesImporter(client: db.client, limits: .init(maximumUncompressedBytes: 200))
            let error = try await #require(throws: AppleSalesError.self) {
                try await bounded.importReport(bytes: zipped, fileName: "big.txt.gz")
            }
            #expect(error.code == .tooLarge)
            #expect(try await importedCounts(db.client) == [0, 0])
            _ = try await importer.importReport(bytes: zipped, fileName: "good.txt.gz")
            #expect(try await importedCounts(db.client) == [1, 3])
        }
    }

    @Test(
        "UPDATE, DELETE and TRUNCATE of the imported reports are refused by the database",
        arguments: ["apple_sales_reports", "apple_sales_report_rows"])
    func appendOnly(table: String) async throws {
        try await withSalesLedger("apple_append_only") { db, _ in
            _ = try await AppleSalesImporter(client: db.client).importReport(
                bytes: Self.report.text(), fileName: "a.txt")
            let before = try await importedCounts(db.client)
            // report_id is an identity column: UPDATE it and PostgreSQL refuses before any trigger.
            let column = table == "apple_sales_reports" ? "file_name" : "sku"
            for statement in [
                "UPDATE \(table) SET \(column) = \(column)", "DELETE FROM \(table)", "TRUNCATE \(table) CASCADE",
            ] {
                let error = try await #require(throws: PostgresError.self, "\(statement)") {
                    try await db.client.withTransaction { connection in
                        try await connection.query("SET LOCAL session_replication_role = replica")
                        try await connection.query(PostgresQuery(unsafeSQL: statement))
                    }
                }
                #expect(error.sqlState == SQLState("SL001"), "\(statement): \(error)")
                #expect(error.message.contains("append-only"))
            }
            #expect(try await importedCounts(db.client) == before)
        }
    }
}
