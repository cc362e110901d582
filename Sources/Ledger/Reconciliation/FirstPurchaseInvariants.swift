/// What holds for `first_purchases` (migration 0011), checked with the ledger's other invariants.
enum FirstPurchaseInvariants {
    /// Every user and book with a priced, self-bought purchase recorded before the catch-up's
    /// watermark has its first purchase in the table, no later than the earliest such purchase;
    /// no row is earlier than the user's earliest purchase in the book, or has no purchase at all.
    /// (Purchases recorded since the watermark may still be missing: readers add them.)
    static let caughtUp = SQLReconciliationCheck(
        name: "first_purchases_caught_up",
        summary: "Each user's first priced, self-bought purchase per book is in first_purchases up to the catch-up's "
            + "watermark, and no row there is earlier than a real purchase.",
        examinedWhat: "first purchases",
        examinedSQL: "SELECT count(*) FROM first_purchases",
        failuresSQL: """
            WITH truth AS (
                SELECT p.uid, p.book::text AS book, min(p.purchased_at) AS first_at,
                       min(p.purchased_at) FILTER (WHERE p.recorded_at < \(FirstPurchaseSQL.since)) AS folded_at
                FROM purchases p
                WHERE p.ownership = 'PURCHASED' AND p.currency IS NOT NULL
                GROUP BY p.uid, p.book
            )
            SELECT coalesce(t.uid, f.uid) || ' ' || coalesce(t.book, f.book),
                   CASE WHEN f.uid IS NULL THEN format('missing: the first purchase is at %s', t.first_at)
                        WHEN t.uid IS NULL THEN format('first_at %s, but no priced, self-bought purchase', f.first_at)
                        ELSE format('first_at %s, the earliest purchase is at %s (%s folded in)',
                                    f.first_at, t.first_at, t.folded_at) END
            FROM truth t
            FULL JOIN (SELECT uid, book::text AS book, first_at FROM first_purchases) f
                 ON f.uid = t.uid AND f.book = t.book
            WHERE (f.uid IS NULL AND t.folded_at IS NOT NULL) OR t.uid IS NULL
               OR f.first_at < t.first_at OR f.first_at > t.folded_at
            """)
}
