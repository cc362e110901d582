import Ledger
import Postgres

/// Production revenue per storefront (`purchases.storefront`, StoreKit's ISO 3166-1 alpha-3 code),
/// per period of a report's window. The same entries as `RevenueQueries.entryGroupsQuery` (so the
/// storefronts of a currency sum to its total exactly), read the same way: the window's purchases on
/// `purchases_by_purchased_at`, its other entries on `journal_entry_rows_by_effective_at` with their
/// purchase looked up by primary key. Not cached: a daily report reads its one day, a range report
/// its range, which the report's own queries read anyway.
enum StorefrontQueries {
    struct Group: Sendable, Hashable {
        let period: Int
        let entryKind: JournalEntryKind
        let currency: String
        let storefront: String?
        let priceMilli: Int64
        let count: Int
    }

    static func groups(_ window: ReportWindow, on connection: PostgresConnection) async throws -> [Group] {
        let rows = try await connection.query(query(window))
        return try rows.map { row in
            let (period, kind, currency, storefront, price, count) =
                try row.decode((Int, String, String, String?, Int64, Int).self)
            guard let entryKind = JournalEntryKind(rawValue: kind) else {
                throw PostgresError(code: .decoding, message: "journal_entries has an unknown kind \(kind)")
            }
            return Group(
                period: period, entryKind: entryKind, currency: currency, storefront: storefront, priceMilli: price,
                count: count)
        }
    }

    /// A refund or reversal takes the storefront of the purchase it refunds (or, for a purchase
    /// recorded unpriced, the one its learned price came with, as its price does).
    static func query(_ window: ReportWindow) -> PostgresQuery {
        """
        WITH bounds AS MATERIALIZED (
            SELECT array_agg(t.day::timestamp AT TIME ZONE \(window.timeZone)::text ORDER BY t.day) AS starts
            FROM unnest(\(window.periodStartTexts)::date[]) AS t (day)
        ),
        entries AS (
            SELECT p.purchased_at AS effective_at, 'purchase'::text AS kind, p.currency, p.price_milli, p.storefront
            FROM purchases p
            WHERE p.purchased_at >= \(window.startsAt)::timestamptz AND p.purchased_at < \(window.endsAt)::timestamptz
              AND p.book = 'production' AND p.ownership = 'PURCHASED'
            UNION ALL
            SELECT j.effective_at, k.kind,
                   \(unsafeSQL: LearnedPriceSQL.inEffect("currency", own: "p.currency", entry: "j")),
                   \(unsafeSQL: LearnedPriceSQL.inEffect("price_milli", own: "p.price_milli", entry: "j")),
                   \(unsafeSQL: LearnedPriceSQL.inEffect("storefront", own: "p.storefront", entry: "j"))
            FROM journal_entries j
            CROSS JOIN LATERAL (
                SELECT p.book, p.currency, p.ownership, p.price_milli, p.storefront FROM purchases p
                WHERE p.store = j.store AND p.environment = j.environment AND p.transaction_id = j.transaction_id
                LIMIT 1
            ) p
            CROSS JOIN LATERAL (
                SELECT j.kind UNION ALL SELECT 'refund' WHERE \(unsafeSQL: LearnedPriceSQL.booksRefund(entry: "j"))
            ) AS k (kind)
            WHERE j.effective_at >= \(window.startsAt)::timestamptz AND j.effective_at < \(window.endsAt)::timestamptz
              AND j.kind <> 'purchase' AND p.book = 'production' AND p.ownership = 'PURCHASED'
        )
        SELECT width_bucket(e.effective_at, b.starts) AS period, e.kind, e.currency, e.storefront, e.price_milli,
               count(*)::int AS entries
        FROM entries e CROSS JOIN bounds b
        WHERE e.currency IS NOT NULL AND e.price_milli IS NOT NULL
        GROUP BY 1, 2, 3, 4, 5
        ORDER BY 1, 2, 3, 4, 5
        """
    }

    /// The storefront figures of each of `count` periods, as `RevenueAggregator` counts entries:
    /// a purchase or a learned price adds a unit, its price and its commission; a refund takes them
    /// back; a reversal restores them.
    static func figures(
        _ groups: [Group], periods count: Int, commission: CommissionRate
    ) throws(ReportError) -> [StorefrontFigures] {
        var periods = [StorefrontFigures](repeating: StorefrontFigures(), count: count)
        for group in groups where periods.indices.contains(group.period - 1) {
            let units = Int64(group.count)
            let unitCommission = commission.commissionMilli(onUnitPriced: group.priceMilli, currency: group.currency)
            var figures = RevenueFigures()
            switch group.entryKind {
            case .purchase, .priceLearned:
                figures.purchases = group.count
                figures.grossMilli = try RevenueFigures.product(units, group.priceMilli)
                figures.commissionMilli = try RevenueFigures.product(units, unitCommission)
            case .refund:
                figures.refunds = group.count
                figures.refundedMilli = try RevenueFigures.product(units, group.priceMilli)
                figures.commissionMilli = try RevenueFigures.product(-units, unitCommission)
            case .refundReversal:
                figures.reversals = group.count
                figures.reversedMilli = try RevenueFigures.product(units, group.priceMilli)
                figures.commissionMilli = try RevenueFigures.product(units, unitCommission)
            case .familyRevoke:
                continue
            }
            let key = StorefrontKey(currency: group.currency, storefront: group.storefront)
            try periods[group.period - 1].lines[key, default: RevenueFigures()].addAmounts(of: figures)
        }
        return periods
    }
}
