import CivilDates
import Foundation
import Postgres

extension AppleSalesImporter {
    /// A day of Apple's reports that was imported: what `shopledger reconcile apple --date` can compare.
    public struct ImportedDay: Sendable, Hashable {
        public let date: CalendarDate
        /// Imports of the date (the comparison reads the newest).
        public let imports: Int
        public let lastImportedAt: Date
        /// The newest import says Apple had no sales that day (`recordNoSales`).
        public let noSales: Bool
    }

    /// The newest imported days, newest first, at most `limit` (1 to 366).
    public func importedDays(limit: Int = 31) async throws -> [ImportedDay] {
        try await client.query(
            """
            SELECT report_date::text, count(*)::bigint, max(imported_at),
                   (array_agg(source ORDER BY report_id DESC))[1] = 'no_sales'
            FROM apple_sales_reports GROUP BY report_date ORDER BY report_date DESC
            LIMIT \(max(1, min(limit, 366)))
            """
        ).map { row in
            let (text, imports, last, noSales) = try row.decode((String, Int, Date, Bool).self)
            guard let date = CalendarDate(text) else {
                throw PostgresError(code: .decoding, message: "apple_sales_reports has report_date \(text)")
            }
            return ImportedDay(date: date, imports: imports, lastImportedAt: last, noSales: noSales)
        }
    }
}
