import CivilDates
import Foundation
import Postgres

/// Compares the newest imported Summary Sales Report of a day with the ledger, in one read-only
/// REPEATABLE READ snapshot (as the revenue reports read), so purchases arriving meanwhile cannot
/// make the two halves disagree.
public struct AppleSalesComparer: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// The comparison for Apple's day `date`; `AppleSalesError(.noReport)` when none was imported.
    public func compare(date: CalendarDate) async throws -> AppleSalesComparison {
        try await client.withTransaction(.init(isolation: .repeatableRead, readOnly: true)) { connection in
            guard let comparison = try await Self.compare(date: date, on: connection) else {
                throw AppleSalesError(
                    .noReport,
                    "no Summary Sales Report for \(date) was imported (`shopledger apple sales import FILE`); Apple publishes a day's report the next day"
                )
            }
            return comparison
        }
    }

    /// The comparison in the caller's transaction (the daily report's snapshot), nil when no report
    /// of `date` was imported.
    public static func compare(
        date: CalendarDate, on connection: PostgresConnection
    ) async throws
        -> AppleSalesComparison?
    {
        let day = date.description
        let reports = try await connection.query(
            """
            SELECT report_id, file_name, count(*) OVER ()
            FROM apple_sales_reports WHERE report_date = \(day)::date
            ORDER BY report_id DESC LIMIT 1
            """)
        guard let newest = reports.first else { return nil }
        let (reportId, fileName, imports) = try newest.decode((Int64, String, Int).self)
        let bounds = try await connection.query(
            """
            SELECT b.starts, b.ends, to_char(b.starts AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),
                to_char(b.ends AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')
            FROM (SELECT \(day)::date::timestamp AT TIME ZONE \(AppleSalesComparison.timeZone) AS starts,
                         (\(day)::date + 1)::timestamp AT TIME ZONE \(AppleSalesComparison.timeZone) AS ends) b
            """
        ).single()
        // Bound as values, so the planner sees constants and reads the day through the indexes
        // (`purchases_by_purchased_at`, `journal_entry_rows_by_effective_at`).
        let starts = try bounds.decode(Date.self, at: 0)
        let ends = try bounds.decode(Date.self, at: 1)
        let startsText = try bounds.decode(String.self, at: 2)
        let endsText = try bounds.decode(String.self, at: 3)

        var figures: [Key: Figures] = [:]
        // Apple: in-app purchase rows; a refund row has negative units, and its amount is negative
        // whichever sign Apple gives its per-unit customer price.
        for row in try await connection.query(
            """
            SELECT sku, country_code, customer_currency, sum(units)::bigint,
                sum(units::bigint * abs(customer_price_milli))::bigint
            FROM apple_sales_report_rows WHERE report_id = \(reportId) AND product_type = 'IA1'
            GROUP BY 1, 2, 3
            """)
        {
            let (sku, country, currency, units, amount) = try row.decode((String, String, String, Int64, Int64).self)
            figures[Key(product: sku, country: country, currency: currency), default: Figures()].add(
                appleUnits: units, appleMilli: amount)
        }
        // The ledger: production purchases bought for themselves, priced (by the purchase or by a
        // price learned later), on the day; refunds (−) and reversals (+) effective on the day.
        // The day's purchases are read with their columns straight from `purchases_by_purchased_at`;
        // only the day's few refunds and reversals look their purchase up, by primary key, so the cost
        // follows the day's activity, not the ledger's history.
        let ledgerRows = try await connection.query(
            """
            WITH events AS (
                SELECT p.transaction_id, p.store, p.environment, p.product_id, p.storefront, p.currency,
                    p.price_milli, 1 AS sign
                FROM purchases p
                WHERE p.purchased_at >= \(starts) AND p.purchased_at < \(ends) AND p.book = 'production'
                  AND p.ownership = 'PURCHASED'
                UNION ALL
                SELECT p.transaction_id, p.store, p.environment, p.product_id, p.storefront, p.currency,
                    p.price_milli, CASE j.kind WHEN 'refund' THEN -1 ELSE 1 END
                FROM journal_entry_rows j
                JOIN purchases p ON (p.transaction_id, p.store, p.environment) = (j.transaction_id, j.store, j.environment)
                WHERE j.effective_at >= \(starts) AND j.effective_at < \(ends)
                  AND j.kind IN ('refund', 'refund_reversal') AND j.book = 'production' AND p.ownership = 'PURCHASED'
            )
            SELECT e.product_id, COALESCE(e.storefront, lp.storefront, ''), COALESCE(e.currency, lp.currency, ''),
                sum(e.sign)::bigint, COALESCE(sum(e.sign * COALESCE(e.price_milli, lp.price_milli)), 0)::bigint,
                COALESCE(e.price_milli, lp.price_milli) IS NULL
            FROM events e
            LEFT JOIN purchase_prices lp
                ON (lp.transaction_id, lp.store, lp.environment) = (e.transaction_id, e.store, e.environment)
            GROUP BY 1, 2, 3, 6
            """)
        var unpriced = 0
        for row in ledgerRows {
            let (product, storefront, currency, units, amount, isUnpriced) =
                try row.decode((String, String, String, Int64, Int64, Bool).self)
            if isUnpriced {
                unpriced += Int(max(0, units))
                continue
            }
            let country =
                StorefrontCountries.alpha2(forStorefront: storefront) ?? (storefront.isEmpty ? "(none)" : storefront)
            figures[Key(product: product, country: country, currency: currency), default: Figures()].add(
                ledgerUnits: units, ledgerMilli: amount)
        }
        let uncompared = try await connection.query(
            """
            SELECT product_type, count(*)::bigint, sum(units)::bigint FROM apple_sales_report_rows
            WHERE report_id = \(reportId) AND product_type <> 'IA1' GROUP BY 1 ORDER BY 1
            """
        ).map { row in
            let (type, rows, units) = try row.decode((String, Int, Int64).self)
            return AppleSalesComparison.Uncompared(productType: type, rows: rows, units: units)
        }
        let lines = figures.map { key, value in
            AppleSalesComparison.Line(
                product: key.product, country: key.country, currency: key.currency, appleUnits: value.appleUnits,
                ledgerUnits: value.ledgerUnits, appleCustomerPriceMilli: value.appleMilli,
                ledgerCustomerPriceMilli: value.ledgerMilli, appleListed: value.appleListed,
                ledgerListed: value.ledgerListed)
        }.sorted()
        return AppleSalesComparison(
            date: date, startsAtUTC: startsText, endsAtUTC: endsText, reportId: reportId, fileName: fileName,
            importsOfDate: imports, matched: lines.filter { $0.kind == .matched },
            discrepancies: lines.filter { $0.kind != .matched }, uncompared: uncompared,
            unpricedLedgerPurchases: unpriced)
    }

    struct Key: Hashable {
        let product: String
        let country: String
        let currency: String
    }

    struct Figures {
        var appleUnits: Int64 = 0
        var appleMilli: Int64 = 0
        var ledgerUnits: Int64 = 0
        var ledgerMilli: Int64 = 0
        var appleListed = false
        var ledgerListed = false

        mutating func add(appleUnits units: Int64, appleMilli milli: Int64) {
            appleListed = true
            appleUnits += units
            appleMilli += milli
        }

        mutating func add(ledgerUnits units: Int64, ledgerMilli milli: Int64) {
            ledgerListed = true
            ledgerUnits += units
            ledgerMilli += milli
        }
    }
}
