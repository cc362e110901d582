import CivilDates
import Foundation
import Postgres
import TestSupport

@testable import AppleSales

/// Writes a Summary Sales Report in Apple's format, from rows made here or read from the ledger
/// itself, so a comparison of the ledger with its own report must match exactly.
struct SalesReportGenerator {
    /// One row of the report.
    struct Row: Hashable {
        var sku: String
        var title = "Sprout"
        var productType = "IA1"
        var units: Int
        var customerPriceMilli: Int64
        var customerCurrency: String
        var countryCode: String
        var proceedsMilli: Int64? = nil
        var appleIdentifier = "1500000001"
        var parentIdentifier = "com.memolease.sesac1"
    }

    /// Header layouts: 1_0-like (fewer columns), 1_3 (all), and 1_3 with its columns shuffled once.
    enum Layout: CaseIterable {
        case v1_0
        case v1_3
        case v1_3Shuffled

        var columns: [String] {
            switch self {
            case .v1_0: Array(Self.all.prefix(24))
            case .v1_3: Self.all
            case .v1_3Shuffled:
                {
                    var generator = SeededGenerator(seed: 28)
                    return Self.all.shuffled(using: &generator)
                }()
            }
        }

        static let all = [
            "Provider", "Provider Country", "SKU", "Developer", "Title", "Version", "Product Type Identifier", "Units",
            "Developer Proceeds", "Begin Date", "End Date", "Customer Currency", "Country Code",
            "Currency of Proceeds", "Apple Identifier", "Customer Price", "Promo Code", "Parent Identifier",
            "Subscription", "Period", "Category", "CMB", "Device", "Supported Platforms", "Proceeds Reason",
            "Preserved Pricing", "Client", "Order Type",
        ]
    }

    let date: CalendarDate
    var layout: Layout = .v1_3
    var rows: [Row] = []

    /// MM/DD/YYYY.
    var appleDate: String {
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(two(date.month))/\(two(date.day))/\(date.year)"
    }

    /// The report's text, `lineEnding` after every line.
    func text(lineEnding: String = "\n") -> [UInt8] {
        let columns = layout.columns
        var lines = [columns.joined(separator: "\t")]
        for row in rows {
            let proceeds = row.proceedsMilli ?? (row.customerPriceMilli * 7 / 10) * (row.units < 0 ? -1 : 1)
            let price = row.units < 0 ? -row.customerPriceMilli : row.customerPriceMilli
            let values: [String: String] = [
                "Provider": "APPLE", "Provider Country": "US", "SKU": row.sku, "Developer": "Memolease",
                "Title": row.title, "Version": "", "Product Type Identifier": row.productType,
                "Units": "\(row.units)", "Developer Proceeds": Milliunits.text(proceeds),
                "Begin Date": appleDate, "End Date": appleDate, "Customer Currency": row.customerCurrency,
                "Country Code": row.countryCode, "Currency of Proceeds": row.customerCurrency,
                "Apple Identifier": row.appleIdentifier,
                "Customer Price": Milliunits.text(row.productType == "IA3" ? 0 : price), "Promo Code": "",
                "Parent Identifier": row.parentIdentifier, "Subscription": "", "Period": "", "Category": "Games",
                "CMB": "", "Device": "iPhone", "Supported Platforms": "iOS", "Proceeds Reason": "",
                "Preserved Pricing": "", "Client": "", "Order Type": "",
            ]
            lines.append(columns.map { values[$0] ?? "" }.joined(separator: "\t"))
        }
        return Array(lines.map { $0 + lineEnding }.joined().utf8)
    }

    func gzipped() -> [UInt8] { gzip(text()) }

    /// The ledger's production purchases (bought, priced) of Apple's day `date` and its refunds and
    /// reversals of that day, as Apple would list them: one row per product, country, currency,
    /// price and sign. Reads the ledger with SQL of its own, not the comparer's.
    static func fromLedger(
        _ client: PostgresClient, date: CalendarDate, layout: Layout = .v1_3
    ) async throws
        -> SalesReportGenerator
    {
        let rows = try await client.query(
            """
            WITH day AS (
                SELECT \(date.description)::date::timestamp AT TIME ZONE 'America/Los_Angeles' AS starts,
                       (\(date.description)::date + 1)::timestamp AT TIME ZONE 'America/Los_Angeles' AS ends
            ), moves AS (
                SELECT p.transaction_id, 1 AS units FROM purchases p, day
                WHERE p.purchased_at >= day.starts AND p.purchased_at < day.ends
                UNION ALL
                SELECT j.transaction_id, CASE j.kind WHEN 'refund' THEN -1 ELSE 1 END FROM journal_entry_rows j, day
                WHERE j.effective_at >= day.starts AND j.effective_at < day.ends
                  AND j.kind IN ('refund', 'refund_reversal')
            )
            SELECT p.product_id, p.storefront, p.currency, p.price_milli, m.units, count(*)::integer
            FROM moves m JOIN purchases p USING (transaction_id)
            WHERE p.book = 'production' AND p.ownership = 'PURCHASED' AND p.price_milli IS NOT NULL
            GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
            """)
        var generator = SalesReportGenerator(date: date, layout: layout)
        for row in rows {
            let (product, storefront, currency, price, sign, count) =
                try row.decode((String, String, String, Int64, Int, Int).self)
            guard let country = StorefrontCountries.alpha2(forStorefront: storefront) else { continue }
            generator.rows.append(
                Row(
                    sku: product, units: sign * count, customerPriceMilli: price, customerCurrency: currency,
                    countryCode: country))
        }
        return generator
    }
}
