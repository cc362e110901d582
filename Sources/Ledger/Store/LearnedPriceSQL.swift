/// SQL for prices learned later (migration 0008), written once for the store, the reconciler and the
/// reports: the price an entry of a purchase recorded without one posts, and whether a price entry
/// booked the purchase's refund too.
package enum LearnedPriceSQL {
    /// The price (`column` `price_milli`) or currency (`currency`) entry `entry` of a purchase posts:
    /// `own` (the purchase's own, e.g. `p.price_milli`), or when that is NULL the one a `price_learned`
    /// entry up to and including `entry` booked. Looked up only for unpriced purchases (COALESCE stops
    /// at its first non-null argument).
    package static func inEffect(_ column: String, own: String, entry: String) -> String {
        """
        coalesce(\(own), (SELECT l.\(column) FROM purchase_prices l
                          JOIN journal_entry_rows le ON le.transaction_id = l.transaction_id AND le.entry_id = l.entry_id
                          WHERE l.transaction_id = \(entry).transaction_id AND l.store = \(entry).store
                            AND l.environment = \(entry).environment AND le.seq <= \(entry).seq))
        """
    }

    /// Whether entry `entry` is a price learned while its purchase was refunded (the latest entry
    /// before it that has a state says `refunded`): such an entry books the refund with the revenue.
    package static func booksRefund(entry: String) -> String {
        """
        CASE WHEN \(entry).kind = 'price_learned' THEN coalesce((
            SELECT purchase_state_after(b.kind) = 'refunded' FROM journal_entries b
            WHERE b.store = \(entry).store AND b.environment = \(entry).environment
              AND b.transaction_id = \(entry).transaction_id AND b.seq < \(entry).seq AND b.kind <> 'price_learned'
            ORDER BY b.seq DESC LIMIT 1), false)
        ELSE false END
        """
    }
}
