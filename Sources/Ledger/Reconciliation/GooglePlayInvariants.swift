/// What holds for Google Play purchases (migration 0021), checked with the ledger's other invariants.
enum GooglePlayInvariants {
    /// Every Play purchase has its purchase token recorded (the acknowledger finds it by it), and every
    /// token Google did not take the acknowledgement of within its three days belongs to a purchase that
    /// is refunded (Google refunds what is not acknowledged, and the voided-purchases read records it).
    static let acknowledged = SQLReconciliationCheck(
        name: "google_play_acknowledged",
        summary: "Every Google Play purchase has its purchase token recorded, and every one not acknowledged "
            + "within Google's three days is refunded in the ledger (Google refunds those).",
        examinedWhat: "Google Play purchases",
        examinedSQL: "SELECT count(*) FROM purchases WHERE store = 'google_play'",
        failuresSQL: """
            SELECT p.store || '/' || p.environment || '/' || p.transaction_id, 'no purchase token recorded'
            FROM purchases p
            WHERE p.store = 'google_play' AND NOT EXISTS (
                SELECT 1 FROM google_play_purchases g
                WHERE g.transaction_id = p.transaction_id AND g.store = p.store AND g.environment = p.environment)
            UNION ALL
            SELECT p.store || '/' || p.environment || '/' || p.transaction_id,
                   'not acknowledged within three days of ' || p.purchased_at || ', and not refunded'
            FROM google_play_purchases g
            JOIN purchases p
              ON p.transaction_id = g.transaction_id AND p.store = g.store AND p.environment = g.environment
            WHERE g.purchased_at < now() - interval '3 days'
              AND NOT EXISTS (SELECT 1 FROM google_play_acknowledgements a WHERE a.purchase_token = g.purchase_token)
              AND NOT EXISTS (
                  SELECT 1 FROM refund_events e
                  WHERE e.transaction_id = p.transaction_id AND e.store = p.store AND e.environment = p.environment
                    AND e.kind = 'refund')
            """)
}
