import CivilDates
import Foundation
import Ledger
import Postgres
import Receipts

/// The SQL behind the reports. Each reads only the rows of its window: purchases by an index range
/// scan on `purchased_at`, the other journal entries (refunds, reversals, revokes) by one on
/// `effective_at`, each looking its purchase up by primary key. The lookups are
/// `LATERAL (… LIMIT 1)` subqueries, which the planner cannot turn into a hash join over the whole
/// `purchases` table, so the plan's cost follows the window's rows whatever the statistics say.
/// Time zone rules are the database's: period boundaries and each entry's period come from the
/// same `AT TIME ZONE`.
enum RevenueQueries {
    /// Whether the database knows `name` as a time zone name (`Asia/Seoul`, `UTC`); abbreviations
    /// and POSIX offsets (`KST`, `UTC+9`) are refused, since their meaning surprises.
    static func isKnownTimeZone(_ name: String, on connection: PostgresConnection) async throws -> Bool {
        try await connection.query("SELECT EXISTS (SELECT 1 FROM pg_timezone_names WHERE name = \(name)::text)")
            .single().decode(Bool.self, at: 0)
    }

    /// Yesterday in `timeZone`, by the database's clock.
    static func yesterday(in timeZone: String, on connection: PostgresConnection) async throws -> CalendarDate {
        let text = try await connection.query("SELECT ((now() AT TIME ZONE \(timeZone)::text)::date - 1)::text")
            .single().decode(String.self, at: 0)
        guard let date = CalendarDate(text) else {
            throw ReportError(.invalidInput, "the database's date \(text) is outside years 1–9999")
        }
        return date
    }

    /// The periods `ranges` with their boundaries in `timeZone`.
    static func periods(
        _ ranges: [ClosedRange<CalendarDate>], timeZone: String, on connection: PostgresConnection
    ) async throws -> [ReportPeriod] {
        guard !ranges.isEmpty else { return [] }
        let starts = ranges.map(\.lowerBound.description) + [ranges.last!.upperBound.adding(days: 1).description]
        let rows = try await connection.query(
            """
            SELECT b.at, to_char(b.at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')
            FROM unnest(\(starts)::date[]) WITH ORDINALITY AS t (day, n)
            CROSS JOIN LATERAL (SELECT t.day::timestamp AT TIME ZONE \(timeZone)::text AS at) b
            ORDER BY t.n
            """)
        let bounds = try rows.map { try $0.decode((Date, String).self) }
        return ranges.enumerated().map { offset, range in
            ReportPeriod(
                first: range.lowerBound, last: range.upperBound, startsAt: bounds[offset].0,
                endsAt: bounds[offset + 1].0,
                startsAtUTC: bounds[offset].1, endsAtUTC: bounds[offset + 1].1)
        }
    }

    /// Journal entries in the window, per period, entry kind, book, store, currency, item, ownership
    /// and unit price, with how many there are. With no window: all of history as period 1.
    static func entryGroups(_ window: ReportWindow?, on connection: PostgresConnection) async throws -> [EntryGroup] {
        try entryGroups(from: try await connection.query(entryGroupsQuery(window)))
    }

    /// The rows of `entryGroupsQuery`, or rows with its columns (the report day cache's).
    static func entryGroups(from rows: PostgresRows) throws -> [EntryGroup] {
        try rows.map { row in
            let (period, entryText, book, store, currency, kind, index, ownership, price, count) =
                try row.decode((Int, String, String, String, String?, String, Int, String, Int64?, Int).self)
            guard let itemKind = ItemKind(rawValue: kind) else {
                throw PostgresError(code: .decoding, message: "purchases has an unknown item kind \(kind)")
            }
            guard let entryKind = JournalEntryKind(rawValue: entryText) else {
                throw PostgresError(code: .decoding, message: "journal_entries has an unknown kind \(entryText)")
            }
            return EntryGroup(
                period: period, entryKind: entryKind, book: book, store: store, currency: currency,
                item: ItemID(kind: itemKind, index: index),
                ownership: OwnershipType(rawValue: ownership), priceMilli: price, count: count)
        }
    }

    static func entryGroupsQuery(_ window: ReportWindow?) -> PostgresQuery {
        let query: PostgresQuery
        if let window {
            // `bounds` holds each period's first instant; width_bucket finds an entry's period with
            // the same AT TIME ZONE that drew the boundaries. A purchase's entry takes effect when it
            // was bought (one per purchase, a reconciled invariant), so purchases are read straight
            // from `purchases` in time order; only the other entries need their purchase looked up.
            query = """
                WITH bounds AS MATERIALIZED (
                    SELECT array_agg(t.day::timestamp AT TIME ZONE \(window.timeZone)::text ORDER BY t.day) AS starts
                    FROM unnest(\(window.periodStartTexts)::date[]) AS t (day)
                ),
                entries AS (
                    SELECT p.purchased_at AS effective_at, 'purchase'::text AS kind, p.book, p.store::text AS store,
                           p.currency, p.item_kind, p.item_index, p.ownership, p.price_milli
                    FROM purchases p
                    WHERE p.purchased_at >= \(window.startsAt)::timestamptz AND p.purchased_at < \(window.endsAt)::timestamptz
                    UNION ALL
                    SELECT j.effective_at, \(unsafeSQL: laterEntries)
                    WHERE j.effective_at >= \(window.startsAt)::timestamptz AND j.effective_at < \(window.endsAt)::timestamptz
                      AND j.kind <> 'purchase'
                )
                SELECT width_bucket(e.effective_at, b.starts) AS period, e.kind, e.book, e.store, e.currency,
                       e.item_kind, e.item_index, e.ownership, e.price_milli, count(*) AS entries
                FROM entries e CROSS JOIN bounds b
                GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
                ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9
                """
        } else {
            query = """
                SELECT 1 AS period, e.kind, e.book, e.store, e.currency, e.item_kind, e.item_index, e.ownership,
                       e.price_milli, count(*) AS entries
                FROM (
                    SELECT 'purchase'::text AS kind, p.book, p.store::text AS store, p.currency, p.item_kind,
                           p.item_index, p.ownership, p.price_milli
                    FROM purchases p
                    UNION ALL
                    SELECT \(unsafeSQL: laterEntries) WHERE j.kind <> 'purchase'
                ) e
                GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
                ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9
                """
        }
        return query
    }

    /// The columns `kind, book, store, currency, item_kind, item_index, ownership, price_milli` of
    /// journal entries `j` other than purchases, and their FROM clause (the caller adds WHERE). Each looks its
    /// purchase up by primary key. A refund or reversal of a purchase priced later (migration 0008)
    /// counts the learned price when it came after it (none before: it posted nothing). A price
    /// learned later counts as the purchase's revenue, plus a refund when the purchase was refunded
    /// then, as its postings book them.
    static let laterEntries = """
        k.kind, p.book, j.store::text AS store,
        \(LearnedPriceSQL.inEffect("currency", own: "p.currency", entry: "j")) AS currency,
        p.item_kind, p.item_index, p.ownership,
        \(LearnedPriceSQL.inEffect("price_milli", own: "p.price_milli", entry: "j")) AS price_milli
        FROM journal_entries j
        CROSS JOIN LATERAL (
            SELECT p.book, p.currency, p.item_kind, p.item_index, p.ownership, p.price_milli FROM purchases p
            WHERE p.store = j.store AND p.environment = j.environment AND p.transaction_id = j.transaction_id
            LIMIT 1
        ) p
        CROSS JOIN LATERAL (
            SELECT j.kind UNION ALL SELECT 'refund' WHERE \(LearnedPriceSQL.booksRefund(entry: "j"))
        ) AS k (kind)
        """

    /// Distinct buyers per period at every level (item, kind, currency, book), over all stores and
    /// (item, kind and currency levels) per store, and how many bought for the first time: their earliest priced, self-bought purchase in the same book falls in the
    /// period. The earliest is the least of `first_purchases` (migration 0011) and the purchases
    /// recorded since its watermark, so the figures do not depend on how far the catch-up got.
    static func buyerGroups(_ window: ReportWindow, on connection: PostgresConnection) async throws -> [BuyerGroup] {
        try buyerGroups(
            from: try await connection.query(
                buyerGroupsQuery(window, since: try await FirstPurchaseSQL.since(on: connection))))
    }

    /// The rows of `buyerGroupsQuery`, or rows with its columns (the report day cache's).
    static func buyerGroups(from rows: PostgresRows) throws -> [BuyerGroup] {
        try rows.map { row in
            let (period, book, store, currency, kind, index, level, buyers, firstTime) =
                try row.decode((Int, String, String?, String?, String?, Int?, Int, Int, Int).self)
            return BuyerGroup(
                period: period, book: book, store: store, currency: currency,
                kind: kind.flatMap(ItemKind.init(rawValue:)),
                index: index,
                groupingLevel: level, buyers: buyers, firstTime: firstTime)
        }
    }

    static func buyerGroupsQuery(_ window: ReportWindow, since: String) -> PostgresQuery {
        """
        WITH bounds AS MATERIALIZED (
            SELECT array_agg(t.day::timestamp AT TIME ZONE \(window.timeZone)::text ORDER BY t.day) AS starts
            FROM unnest(\(window.periodStartTexts)::date[]) AS t (day)
        ),
        bought AS (
            SELECT width_bucket(p.purchased_at, b.starts) AS period, p.book, p.store::text AS store, p.currency,
                   p.item_kind, p.item_index, p.uid
            FROM purchases p
            CROSS JOIN bounds b
            WHERE p.purchased_at >= \(window.startsAt)::timestamptz AND p.purchased_at < \(window.endsAt)::timestamptz
              AND p.ownership = 'PURCHASED' AND p.currency IS NOT NULL
        ),
        recent AS MATERIALIZED (
            SELECT p.uid, p.book, min(p.purchased_at) AS first_at
            FROM purchases p
            WHERE p.recorded_at >= \(since)::timestamptz AND p.ownership = 'PURCHASED' AND p.currency IS NOT NULL
            GROUP BY p.uid, p.book
        ),
        -- Each user's first purchase per book that falls in the window: the table's in the window, and
        -- the recent ones unless the table knows an earlier one; the least of both must be in it.
        firsts AS (
            SELECT f.uid, f.book, width_bucket(min(f.first_at), b.starts) AS period
            FROM (
                SELECT t.uid, t.book, t.first_at FROM first_purchases t
                WHERE t.first_at >= \(window.startsAt)::timestamptz AND t.first_at < \(window.endsAt)::timestamptz
                UNION ALL
                SELECT r.uid, r.book, r.first_at FROM recent r
                WHERE r.first_at < \(window.endsAt)::timestamptz AND NOT EXISTS (
                    SELECT 1 FROM first_purchases t
                    WHERE t.uid = r.uid AND t.book = r.book AND t.first_at < \(window.startsAt)::timestamptz)
            ) f
            CROSS JOIN bounds b
            GROUP BY f.uid, f.book, b.starts
            HAVING min(f.first_at) >= \(window.startsAt)::timestamptz
        ),
        -- A purchase in the window is a first-time buyer's when its user's first purchase in the book
        -- is in the same period (it cannot be later than the purchase itself).
        flagged AS (
            SELECT x.*, f.uid IS NOT NULL AS first_time
            FROM bought x
            LEFT JOIN firsts f ON f.uid = x.uid AND f.book = x.book AND f.period = x.period
        )
        -- `store` is NULL in the sets over all stores (a purchase always has one).
        SELECT period, book, store, currency, item_kind, item_index, GROUPING(currency, item_kind, item_index) AS level,
               count(DISTINCT uid) AS buyers, count(DISTINCT uid) FILTER (WHERE first_time) AS first_time_buyers
        FROM flagged
        GROUP BY GROUPING SETS ((period, book, currency, item_kind, item_index), (period, book, currency, item_kind),
                                (period, book, currency), (period, book),
                                (period, book, store, currency, item_kind, item_index),
                                (period, book, store, currency, item_kind), (period, book, store, currency))
        ORDER BY 1, 2, 3, 4, 5, 6
        """
    }

    /// The production refunds and reversals in `window`, oldest first, at most `limit`.
    static func refundLines(
        _ window: ReportWindow, limit: Int, on connection: PostgresConnection
    ) async throws -> [RefundLine] {
        let rows = try await connection.query(refundLinesQuery(window, limit: limit))
        return try rows.map { row in
            let (time, kind, transactionId, itemKind, index, price, currency, purchasedOn, reason) =
                try row.decode((String, String, String, String, Int, Int64, String, String, Int?).self)
            guard let itemKind = ItemKind(rawValue: itemKind) else {
                throw PostgresError(code: .decoding, message: "purchases has an unknown item kind \(itemKind)")
            }
            guard let entryKind = JournalEntryKind(rawValue: kind), entryKind == .refund || entryKind == .refundReversal
            else { throw PostgresError(code: .decoding, message: "a refund line has journal entry kind \(kind)") }
            return RefundLine(
                localTime: time, isReversal: entryKind == .refundReversal, transactionId: transactionId,
                item: ItemID(kind: itemKind, index: index), amount: Money(amountMilli: price, currency: currency),
                purchasedOn: purchasedOn, revocationReason: reason)
        }
    }

    static func refundLinesQuery(_ window: ReportWindow, limit: Int) -> PostgresQuery {
        """
        SELECT to_char(x.effective_at AT TIME ZONE \(window.timeZone)::text, 'YYYY-MM-DD HH24:MI:SS') AS local_time,
               x.kind, x.transaction_id, x.item_kind, x.item_index, x.price_milli, x.currency,
               ((x.purchased_at AT TIME ZONE \(window.timeZone)::text)::date)::text AS purchased_on,
               e.revocation_reason
        FROM (
            -- A refund or reversal with the price it posts (a price learned before it counts), and a
            -- price learned while refunded, which books the refund then (migration 0008).
            SELECT j.effective_at, j.transaction_id, j.entry_id, j.refund_event_id, p.item_kind, p.item_index,
                   p.purchased_at, CASE j.kind WHEN 'price_learned' THEN 'refund' ELSE j.kind END AS kind,
                   \(unsafeSQL: LearnedPriceSQL.inEffect("price_milli", own: "p.price_milli", entry: "j")) AS price_milli,
                   \(unsafeSQL: LearnedPriceSQL.inEffect("currency", own: "p.currency", entry: "j")) AS currency
            FROM journal_entries j
            CROSS JOIN LATERAL (
                SELECT p.item_kind, p.item_index, p.price_milli, p.currency, p.purchased_at FROM purchases p
                WHERE p.store = j.store AND p.environment = j.environment AND p.transaction_id = j.transaction_id
                  AND p.book = 'production' AND p.ownership = 'PURCHASED'
                LIMIT 1
            ) p
            WHERE j.effective_at >= \(window.startsAt)::timestamptz AND j.effective_at < \(window.endsAt)::timestamptz
              AND j.kind <> 'purchase'
              AND (j.kind IN ('refund', 'refund_reversal')
                   OR (j.kind = 'price_learned' AND \(unsafeSQL: LearnedPriceSQL.booksRefund(entry: "j"))))
        ) x
        LEFT JOIN LATERAL (
            SELECT e.revocation_reason FROM refund_events e WHERE e.source_event_id = x.refund_event_id LIMIT 1
        ) e ON true
        WHERE x.currency IS NOT NULL
        ORDER BY x.effective_at, x.transaction_id, x.entry_id
        LIMIT \(limit)
        """
    }

    /// When the newest journal entry was recorded, `YYYY-MM-DD HH:MM:SS` UTC; nil for an empty
    /// ledger. One step down `purchases_by_recorded_at` and `journal_entry_rows_by_recorded_at`
    /// (the `journal_entries` view is both, migration 0007).
    static func dataAsOf(on connection: PostgresConnection) async throws -> String? {
        try await connection.query(
            "SELECT to_char(max(recorded_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') FROM journal_entries"
        ).single().decode(String?.self, at: 0)
    }

    /// The catalog's names and product ids.
    static func catalog(on connection: PostgresConnection) async throws -> ReportCatalog {
        let rows = try await connection.query("SELECT kind, item_index, product_id, name FROM catalog_items")
        var entries: [ItemID: ReportCatalog.Entry] = [:]
        for row in rows {
            let (kind, index, productId, name) = try row.decode((String, Int, String?, String).self)
            guard let itemKind = ItemKind(rawValue: kind) else { continue }
            entries[ItemID(kind: itemKind, index: index)] = ReportCatalog.Entry(productId: productId, name: name)
        }
        return ReportCatalog(entries: entries)
    }

    /// Production-and-test postings on revenue, refund and receivable accounts per account and
    /// currency, for the journal entries in `window` (all of history when nil).
    static func revenuePostings(
        _ window: ReportWindow?, on connection: PostgresConnection
    ) async throws -> [AccountBalance] {
        let rows = try await connection.query(revenuePostingsQuery(window))
        return try rows.map { row in
            let (account, currency, amount) = try row.decode((String, String, Int64).self)
            return AccountBalance(account: account, currency: currency, amountMilli: amount)
        }
    }
}

extension RevenueQueries {
    static func revenuePostingsQuery(_ window: ReportWindow?) -> PostgresQuery {
        guard let window else {
            return """
                SELECT account, currency, sum(amount_milli) FROM postings
                WHERE account ~ '(^|:)(revenue|refunds|receivable):'
                GROUP BY 1, 2
                """
        }
        // OFFSET 0 keeps the subquery a per-entry primary-key lookup, as LIMIT 1 does above.
        return """
            SELECT po.account, po.currency, sum(po.amount_milli)
            FROM journal_entries j
            CROSS JOIN LATERAL (
                SELECT po.account, po.currency, po.amount_milli FROM postings po
                WHERE po.transaction_id = j.transaction_id AND po.entry_id = j.entry_id
                  AND po.account ~ '(^|:)(revenue|refunds|receivable):'
                OFFSET 0
            ) po
            WHERE j.effective_at >= \(window.startsAt)::timestamptz AND j.effective_at < \(window.endsAt)::timestamptz
            GROUP BY 1, 2
            """
    }
}

/// How many journal entries of one shape a window holds (a row of `entryGroups`).
struct EntryGroup: Sendable, Hashable {
    /// 1 for the window's first period; the report day cache renumbers the rows of a part of it.
    var period: Int
    let entryKind: JournalEntryKind
    let book: String
    /// The store of the purchase (`app_store`, `google_play`, `stub`).
    let store: String
    let currency: String?
    let item: ItemID
    let ownership: OwnershipType
    let priceMilli: Int64?
    let count: Int
}

/// Distinct buyers at one level of one period (a row of `buyerGroups`). `groupingLevel` is
/// SQL's GROUPING(currency, kind, index): 0 item, 1 kind, 3 currency, 7 book.
struct BuyerGroup: Sendable, Hashable {
    var period: Int
    let book: String
    /// The store the buyers bought in; nil for the counts over all stores. Levels 0, 1 and 3 only.
    let store: String?
    let currency: String?
    let kind: ItemKind?
    let index: Int?
    let groupingLevel: Int
    let buyers: Int
    let firstTime: Int
}

/// The sum of an account's postings in one currency.
struct AccountBalance: Sendable, Hashable {
    let account: String
    let currency: String
    let amountMilli: Int64
}
