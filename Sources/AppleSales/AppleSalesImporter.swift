import CivilDates
import Crypto
import Foundation
import Postgres

/// What importing one file did.
public struct AppleSalesImportOutcome: Sendable, Hashable {
    public enum Status: String, Sendable, Hashable {
        /// Stored now.
        case imported
        /// The same content (by SHA-256 of the uncompressed bytes) was stored before; nothing written.
        case alreadyImported = "already imported"
    }

    public let status: Status
    /// The stored report (this import's, or the earlier one with the same content).
    public let reportId: Int64
    /// The report's day (Pacific time, as Apple's reports are).
    public let date: CalendarDate
    /// Rows of the file.
    public let rows: Int
    public let fileName: String
    /// SHA-256 of the uncompressed bytes, hex.
    public let sha256: String
    /// The version inferred from the header (1_0 ... 1_3).
    public let formatVersion: String
    /// Earlier imports of a DIFFERENT file for the same date; the comparison reads the newest import.
    public let earlierReportsForDate: [Int64]

    /// One line for a person: `report.txt.gz: imported 2025-03-09 (report 3, 42 rows, version 1_3)`.
    public var summary: String {
        var text =
            formatVersion.isEmpty
            ? "\(fileName): \(status == .imported ? "recorded" : "already recorded") (report \(reportId))"
            : "\(fileName): \(status.rawValue) \(date) (report \(reportId), \(rows) rows, version \(formatVersion))"
        if !earlierReportsForDate.isEmpty {
            text +=
                "; it supersedes the earlier import\(earlierReportsForDate.count == 1 ? "" : "s") "
                + earlierReportsForDate.map { "\($0)" }.joined(separator: ", ")
                + " of that date (kept; the newest is compared)"
        }
        return text
    }
}

/// Imports Apple's daily Summary Sales Reports into `apple_sales_reports` and
/// `apple_sales_report_rows` (migration 0014). A file is parsed whole before anything is written and
/// stored in one transaction: a refused file stores nothing. Importing the same content twice stores
/// it once. `shopledger apple sales import` and `shopledger apple sales fetch` both call it.
public struct AppleSalesImporter: Sendable {
    /// Rows written per INSERT (bound as arrays).
    static let batchRows = 2000

    let client: PostgresClient
    let parser: SummarySalesParser

    public init(client: PostgresClient) {
        self.init(client: client, limits: .standard)
    }

    public init(client: PostgresClient, limits: SummarySalesLimits) {
        self.client = client
        self.parser = SummarySalesParser(limits: limits)
    }

    /// Parses `bytes` (gzip'd or plain) and stores the report, once. Throws `AppleSalesError` for a
    /// refused file (nothing stored), `PostgresError` when the database fails.
    public func importReport(bytes: [UInt8], fileName: String) async throws -> AppleSalesImportOutcome {
        let name = Self.storedName(fileName)
        let report = try parser.parse(bytes)
        let header = report.columns.joined(separator: "\t")
        return try await store(
            date: report.date, fileName: name, digest: Data(report.sha256), rows: report.rows.count,
            formatVersion: report.formatVersion,
            insert: """
                INSERT INTO apple_sales_reports (report_date, provider, provider_country, format_version, header,
                    file_name, content_sha256, uncompressed_bytes, row_count)
                VALUES (\(report.date.description)::date, \(report.provider), \(report.providerCountry),
                    \(report.formatVersion), \(header), \(name), \(Data(report.sha256)), \(report.uncompressedBytes),
                    \(report.rows.count))
                ON CONFLICT (content_sha256) DO NOTHING
                RETURNING report_id
                """
        ) { reportId, connection in
            try await Self.insertRows(report.rows, reportId: reportId, on: connection)
        }
    }

    /// Records that Apple says `date` had no sales (App Store Connect's 404 "There were no sales for the
    /// date specified."): a report without rows (migration 0015), so the comparison of that day reads
    /// Apple's zero. Recorded once per date; a report imported for the date later is newer and is the one
    /// compared.
    public func recordNoSales(date: CalendarDate) async throws -> AppleSalesImportOutcome {
        let name = "App Store Connect: no sales on \(date)"
        let digest = Data(SHA256.hash(data: Data(name.utf8)))
        return try await store(
            date: date, fileName: name, digest: digest, rows: 0, formatVersion: "",
            insert: """
                INSERT INTO apple_sales_reports (report_date, format_version, header, file_name, content_sha256,
                    uncompressed_bytes, row_count, source)
                VALUES (\(date.description)::date, '', '', \(name), \(digest), 0, 0, 'no_sales')
                ON CONFLICT (content_sha256) DO NOTHING
                RETURNING report_id
                """
        ) { _, _ in }
    }

    /// Runs `insert` (an INSERT … ON CONFLICT (content_sha256) DO NOTHING RETURNING report_id) in one
    /// transaction; when it stored a new report, `writeRows` writes its rows in the same transaction. The
    /// outcome names the report (this one, or the earlier one of the same content) and the earlier
    /// imports of its date.
    private func store(
        date: CalendarDate, fileName: String, digest: Data, rows: Int, formatVersion: String,
        insert: PostgresQuery, writeRows: @escaping @Sendable (Int64, PostgresConnection) async throws -> Void
    ) async throws -> AppleSalesImportOutcome {
        let hex = digest.map { String(format: "%02x", $0) }.joined()
        return try await client.withTransaction(.retrying(3)) { connection in
            let status: AppleSalesImportOutcome.Status
            let reportId: Int64
            if let row = try await connection.query(insert).first {
                status = .imported
                reportId = try row.decode(Int64.self, at: 0)
                try await writeRows(reportId, connection)
            } else {
                status = .alreadyImported
                reportId = try await connection.query(
                    "SELECT report_id FROM apple_sales_reports WHERE content_sha256 = \(digest)"
                ).single().decode(Int64.self, at: 0)
            }
            let earlier = try await connection.query(
                """
                SELECT report_id FROM apple_sales_reports
                WHERE report_date = \(date.description)::date AND report_id < \(reportId)
                ORDER BY report_id
                """
            ).map { try $0.decode(Int64.self, at: 0) }
            return AppleSalesImportOutcome(
                status: status, reportId: reportId, date: date, rows: rows, fileName: fileName, sha256: hex,
                formatVersion: formatVersion, earlierReportsForDate: earlier)
        }
    }

    /// The file's base name, bounded to the column's 255 characters.
    static func storedName(_ fileName: String) -> String {
        let base = fileName.split(separator: "/").last.map(String.init) ?? fileName
        let name = base.isEmpty ? "report" : base
        return String(name.unicodeScalars.filter { $0 != "\0" }.prefix(255).map(Character.init))
    }

    static func insertRows(_ rows: [SummarySalesRow], reportId: Int64, on connection: PostgresConnection) async throws {
        var start = 0
        while start < rows.count {
            let batch = rows[start..<min(start + batchRows, rows.count)]
            start += batch.count
            try await connection.query(
                """
                INSERT INTO apple_sales_report_rows (report_id, line, sku, title, product_type, units,
                    customer_price_milli, customer_currency, country_code, developer_proceeds_milli,
                    proceeds_currency, apple_identifier, parent_identifier, promo_code, app_version)
                SELECT \(reportId), line, sku, NULLIF(title, ''), product_type, units, price, currency, country,
                    proceeds, proceeds_currency, NULLIF(apple_id, ''), NULLIF(parent_id, ''), NULLIF(promo, ''),
                    NULLIF(app_version, '')
                FROM unnest(\(batch.map(\.line))::integer[], \(batch.map(\.sku))::text[],
                    \(batch.map { $0.title ?? "" })::text[], \(batch.map(\.productType))::text[],
                    \(batch.map(\.units))::integer[], \(batch.map(\.customerPriceMilli))::bigint[],
                    \(batch.map(\.customerCurrency))::text[], \(batch.map(\.countryCode))::text[],
                    \(batch.map(\.developerProceedsMilli))::bigint[], \(batch.map(\.proceedsCurrency))::text[],
                    \(batch.map { $0.appleIdentifier ?? "" })::text[], \(batch.map { $0.parentIdentifier ?? "" })::text[],
                    \(batch.map { $0.promoCode ?? "" })::text[], \(batch.map { $0.version ?? "" })::text[])
                    AS r (line, sku, title, product_type, units, price, currency, country, proceeds,
                          proceeds_currency, apple_id, parent_id, promo, app_version)
                """)
        }
    }
}
