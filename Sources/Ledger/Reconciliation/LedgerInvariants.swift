/// The ledger's invariants as SQL, run by `Reconciler` (and after every ledger test).
///
/// Each lists its failures by the ids of the rows at fault: journal entries by `entry <id>`,
/// purchases by `store/environment/transaction_id`, grants by `uid kind index`, balances by
/// `account currency`.
public enum LedgerInvariants {
    public static let all: [any ReconciliationCheck] = [
        postingsBalance, journalPerPurchase, entryPostingsMatchPurchase, receivableMatchesPurchases,
        learnedPricesBooked, grantsMatchHistory, liveGrantsBacked, refundEventsApplied, notificationsApplied,
        equippedItemsOwned,
        noOrphans, appendOnlyEnforced, SupportInvariants.grantsBacked, FirstPurchaseInvariants.caughtUp,
        CatalogInvariants.audited, GooglePlayInvariants.acknowledged,
    ]

    /// SQL naming purchase/entry `x`'s store transaction.
    private static func transactionKey(_ alias: String) -> String {
        "\(alias).store || '/' || \(alias).environment || '/' || \(alias).transaction_id"
    }

    /// Each transaction's latest journal entry that has a state, of those after its purchase's own
    /// (seq 0): one pass over the journal for the whole ledger. `Purchase.stateExpression` asks the same
    /// per purchase, a probe of both halves of the `journal_entries` view per row: at 1M purchases the
    /// two checks asking it took 16.2 of reconcile's 42 s of PostgreSQL CPU, now 4.6 s (each check's SQL
    /// on ReportsBench's kept 1M cluster, CPU from /proc). A purchase with no such entry is in the state
    /// its purchase entry leaves, `purchase_state_after('purchase')`; that the purchase entry is seq 0
    /// and the only one is `one_purchase_entry_per_purchase`'s to prove. The filter on `seq` leaves the
    /// view's derived half out of the plan (its seq is the constant 0).
    private static let laterStates = """
        SELECT DISTINCT ON (j.transaction_id, j.store, j.environment)
               j.transaction_id, j.store, j.environment, purchase_state_after(j.kind) AS state
        FROM journal_entries j
        WHERE j.seq > 0 AND j.kind <> 'price_learned'
        ORDER BY j.transaction_id, j.store, j.environment, j.seq DESC
        """

    /// The state of purchase `p` joined to `laterStates` as `s`.
    private static let purchaseState = "coalesce(s.state, purchase_state_after('purchase'))"

    /// Joins `laterStates` (a CTE named `later_states`) to purchase `p`.
    private static let joinLaterStates = """
        LEFT JOIN later_states s
          ON s.transaction_id = p.transaction_id AND s.store = p.store AND s.environment = p.environment
        """

    public static let postingsBalance = SQLReconciliationCheck(
        name: "postings_balance",
        summary: "The postings of every journal entry sum to zero in each currency.",
        examinedWhat: "journal entries",
        examinedSQL: "SELECT count(*) FROM journal_entries",
        failuresSQL: """
            SELECT 'entry ' || p.entry_id || ' (' || coalesce(\(transactionKey("j")) || ' ' || j.kind, p.transaction_id || ', no such entry')
                   || ') ' || p.currency,
                   'postings sum to ' || sum(p.amount_milli) || ' milli, not 0'
            FROM postings p
            LEFT JOIN journal_entries j ON j.transaction_id = p.transaction_id AND j.entry_id = p.entry_id
            GROUP BY p.transaction_id, p.entry_id, p.currency, j.entry_id, j.store, j.environment, j.transaction_id, j.kind
            HAVING sum(p.amount_milli) <> 0 OR j.entry_id IS NULL
            """)

    public static let journalPerPurchase = SQLReconciliationCheck(
        name: "one_purchase_entry_per_purchase",
        summary: "Each purchase has exactly one purchase entry (seq 0), its later entries are numbered 1..n, "
            + "and every entry names the purchase's user and book.",
        examinedWhat: "purchases",
        examinedSQL: "SELECT count(*) FROM purchases",
        failuresSQL: """
            SELECT \(transactionKey("p")), count(j.entry_id) || ' purchase entries, expected 1'
            FROM purchases p
            LEFT JOIN journal_entries j
              ON j.store = p.store AND j.environment = p.environment AND j.transaction_id = p.transaction_id
             AND j.kind = 'purchase'
            GROUP BY p.store, p.environment, p.transaction_id
            HAVING count(j.entry_id) <> 1
            UNION ALL
            SELECT \(transactionKey("j")), 'entries numbered ' || string_agg(j.seq::text, ',' ORDER BY j.seq) || ', expected 0..'
                   || (count(*) - 1)
            FROM journal_entries j
            GROUP BY j.store, j.environment, j.transaction_id
            HAVING min(j.seq) <> 0 OR max(j.seq) <> count(*) - 1
            UNION ALL
            SELECT 'entry ' || j.entry_id || ' (' || \(transactionKey("j")) || ')',
                   format('entry names user %s book %s, the purchase user %s book %s', j.uid, j.book, p.uid, p.book)
            FROM journal_entries j
            JOIN purchases p USING (store, environment, transaction_id)
            WHERE j.uid <> p.uid OR j.book <> p.book
            """)

    /// Every journal entry with the price it posts (NULL when none) and its sign on the receivable:
    /// a purchase entry its purchase's own price; a later entry the purchase's price, or the one a
    /// `price_learned` entry up to and including it booked (migration 0008). `books_refund`: a price
    /// entry learned while the purchase was refunded, which books that refund too.
    private static let entryMoney = """
        SELECT j.transaction_id, j.entry_id, j.kind, p.store, p.book, p.item_kind, p.ownership,
               CASE WHEN j.kind = 'purchase' THEN p.price_milli
                    ELSE \(LearnedPriceSQL.inEffect("price_milli", own: "p.price_milli", entry: "j")) END AS price_milli,
               CASE WHEN j.kind = 'purchase' THEN p.currency
                    ELSE \(LearnedPriceSQL.inEffect("currency", own: "p.currency", entry: "j")) END AS currency,
               CASE j.kind WHEN 'purchase' THEN 1 WHEN 'price_learned' THEN 1 WHEN 'refund' THEN -1
                           WHEN 'refund_reversal' THEN 1 ELSE 0 END AS sign,
               \(LearnedPriceSQL.booksRefund(entry: "j")) AS books_refund
        FROM journal_entries j
        JOIN purchases p USING (store, environment, transaction_id)
        """

    public static let entryPostingsMatchPurchase = SQLReconciliationCheck(
        name: "entry_postings_match_purchase",
        summary: "Every entry has exactly the postings its purchase calls for: a bought, priced purchase (or a price "
            + "learned later) debits receivable and credits revenue, a refund debits refunds and credits receivable, "
            + "a reversal the opposite, a price learned while refunded books that refund too; family-shared, "
            + "unpriced and revoke entries have none.",
        examinedWhat: "journal entries",
        examinedSQL: "SELECT count(*) FROM journal_entries",
        failuresSQL: """
            WITH entries AS (\(entryMoney)),
            expected AS (
                SELECT e.transaction_id, e.entry_id, v.account, e.currency, v.amount
                FROM entries e
                CROSS JOIN LATERAL (VALUES
                    (ledger_account(e.book, 'receivable:' || e.store), e.sign * e.price_milli),
                    (ledger_account(e.book, CASE WHEN e.kind IN ('purchase', 'price_learned') THEN 'revenue:'
                                                 ELSE 'refunds:' END || e.item_kind),
                     -e.sign * e.price_milli),
                    (ledger_account(e.book, 'refunds:' || e.item_kind), CASE WHEN e.books_refund THEN e.price_milli END),
                    (ledger_account(e.book, 'receivable:' || e.store), CASE WHEN e.books_refund THEN -e.price_milli END)
                ) AS v (account, amount)
                WHERE e.ownership = 'PURCHASED' AND e.price_milli > 0 AND e.sign <> 0 AND v.amount IS NOT NULL
            ),
            actual AS (
                SELECT transaction_id, entry_id, account, currency, amount_milli AS amount FROM postings
            )
            SELECT 'entry ' || coalesce(x.entry_id, a.entry_id) || ' (' || coalesce(x.transaction_id, a.transaction_id) || ')',
                   CASE WHEN a.entry_id IS NULL THEN 'missing posting ' ELSE 'unexpected posting ' END
                   || coalesce(x.account, a.account) || ' ' || coalesce(x.amount, a.amount) || ' '
                   || coalesce(x.currency, a.currency)
            FROM expected x
            FULL JOIN actual a
              ON x.transaction_id = a.transaction_id AND x.entry_id = a.entry_id AND x.account = a.account
             AND x.currency = a.currency AND x.amount = a.amount
            WHERE x.entry_id IS NULL OR a.entry_id IS NULL
            """)

    public static let receivableMatchesPurchases = SQLReconciliationCheck(
        name: "receivable_matches_purchases",
        summary: "Each receivable account's balance, per currency, equals its purchases (and prices learned later) "
            + "minus refunds (plus reversed refunds), computed from the prices and the journal's entry kinds.",
        examinedWhat: "receivable balances (account, currency)",
        examinedSQL: """
            SELECT count(*) FROM (
                SELECT DISTINCT ledger_account(book, 'receivable:' || store), currency FROM purchases
                WHERE ownership = 'PURCHASED' AND price_milli > 0
                UNION
                SELECT DISTINCT account, currency FROM postings WHERE account ~ '(^|:)receivable:'
            ) balances
            """,
        failuresSQL: """
            WITH entries AS (\(entryMoney)),
            expected AS (
                SELECT ledger_account(e.book, 'receivable:' || e.store) AS account, e.currency,
                       sum(e.sign * e.price_milli - CASE WHEN e.books_refund THEN e.price_milli ELSE 0 END) AS amount
                FROM entries e
                WHERE e.ownership = 'PURCHASED' AND e.price_milli > 0
                GROUP BY 1, 2
            ),
            actual AS (
                SELECT account, currency, sum(amount_milli) AS amount FROM postings
                WHERE account ~ '(^|:)receivable:' GROUP BY 1, 2
            )
            SELECT coalesce(e.account, a.account) || ' ' || coalesce(e.currency, a.currency),
                   format('postings sum to %s milli, purchases minus refunds are %s milli',
                          coalesce(a.amount, 0), coalesce(e.amount, 0))
            FROM expected e FULL JOIN actual a ON e.account = a.account AND e.currency = a.currency
            WHERE coalesce(e.amount, 0) <> coalesce(a.amount, 0)
            """)

    public static let learnedPricesBooked = SQLReconciliationCheck(
        name: "learned_prices_booked",
        summary: "Every price learned later names a price_learned entry of its own transaction and prices a bought "
            + "purchase recorded without a price; every price_learned entry has its learned price.",
        examinedWhat: "learned prices",
        examinedSQL: "SELECT count(*) FROM purchase_prices",
        failuresSQL: """
            SELECT 'price ' || \(transactionKey("l")), 'names entry ' || l.entry_id || ', not a price_learned entry of it'
            FROM purchase_prices l
            WHERE NOT EXISTS (
                SELECT 1 FROM journal_entry_rows j
                WHERE j.transaction_id = l.transaction_id AND j.entry_id = l.entry_id AND j.store = l.store
                  AND j.environment = l.environment AND j.kind = 'price_learned')
            UNION ALL
            SELECT 'price ' || \(transactionKey("l")),
                   CASE WHEN p.ownership <> 'PURCHASED' THEN 'prices a family-shared purchase'
                        ELSE 'prices a purchase recorded with a price' END
            FROM purchase_prices l JOIN purchases p USING (transaction_id, store, environment)
            WHERE p.ownership <> 'PURCHASED' OR p.price_milli IS NOT NULL
            UNION ALL
            SELECT 'entry ' || j.entry_id || ' (' || \(transactionKey("j")) || ')', 'a price_learned entry without its price'
            FROM journal_entry_rows j
            WHERE j.kind = 'price_learned'
              AND NOT EXISTS (SELECT 1 FROM purchase_prices l
                              WHERE l.transaction_id = j.transaction_id AND l.entry_id = j.entry_id)
            """)

    public static let grantsMatchHistory = SQLReconciliationCheck(
        name: "grants_match_history",
        summary: "Every grant row equals the replay of its grant_events (free, purchased and shared counts), "
            + "and every history has its grant row.",
        examinedWhat: "grants",
        examinedSQL: "SELECT count(*) FROM grants",
        failuresSQL: """
            WITH replay AS (
                SELECT uid, item_kind, item_index,
                       coalesce(sum(delta) FILTER (WHERE source = 'free'), 0) AS free,
                       coalesce(sum(delta) FILTER (WHERE source = 'purchased'), 0) AS purchased,
                       coalesce(sum(delta) FILTER (WHERE source = 'family_shared'), 0) AS shared
                FROM grant_events GROUP BY uid, item_kind, item_index
            )
            SELECT coalesce(g.uid, r.uid) || ' ' || coalesce(g.item_kind, r.item_kind) || ' '
                   || coalesce(g.item_index, r.item_index),
                   format('grant row free=%s purchased=%s shared=%s, history replays to free=%s purchased=%s shared=%s',
                          coalesce(g.free::int::text, 'none'), g.purchased_count, g.shared_count,
                          coalesce(r.free::text, 'none'), r.purchased, r.shared)
            FROM grants g
            FULL JOIN replay r ON g.uid = r.uid AND g.item_kind = r.item_kind AND g.item_index = r.item_index
            WHERE g.uid IS NULL OR r.uid IS NULL
               OR g.free::int <> r.free OR g.purchased_count <> r.purchased OR g.shared_count <> r.shared
            """)

    public static let liveGrantsBacked = SQLReconciliationCheck(
        name: "live_grants_backed",
        summary: "Every owned item is backed by as many live purchases (bought and family-shared) as its grant "
            + "counts, or is a free item; every user owns the free items.",
        examinedWhat: "owned grants",
        examinedSQL: "SELECT count(*) FROM grants WHERE owned",
        failuresSQL: """
            WITH later_states AS (\(laterStates)),
            state AS (
                SELECT p.uid, p.item_kind, p.item_index, p.ownership, \(purchaseState) AS state
                FROM purchases p
                \(joinLaterStates)
            ),
            live AS (
                SELECT uid, item_kind, item_index,
                       count(*) FILTER (WHERE ownership = 'PURCHASED') AS purchased,
                       count(*) FILTER (WHERE ownership = 'FAMILY_SHARED') AS shared
                FROM state WHERE state = 'live'
                GROUP BY uid, item_kind, item_index
            )
            SELECT coalesce(g.uid, l.uid) || ' ' || coalesce(g.item_kind, l.item_kind) || ' '
                   || coalesce(g.item_index, l.item_index),
                   format('grant counts purchased=%s shared=%s, live purchases are purchased=%s shared=%s',
                          coalesce(g.purchased_count, 0), coalesce(g.shared_count, 0),
                          coalesce(l.purchased, 0), coalesce(l.shared, 0))
            FROM grants g
            FULL JOIN live l ON g.uid = l.uid AND g.item_kind = l.item_kind AND g.item_index = l.item_index
            WHERE coalesce(g.purchased_count, 0) <> coalesce(l.purchased, 0)
               OR coalesce(g.shared_count, 0) <> coalesce(l.shared, 0)
            UNION ALL
            SELECT g.uid || ' ' || g.item_kind || ' ' || g.item_index, 'marked free but is a paid item'
            FROM grants g WHERE g.free AND g.item_index <> 0
            UNION ALL
            SELECT u.uid || ' ' || c.kind || ' ' || c.item_index, 'the free item is not owned'
            FROM users u CROSS JOIN catalog_items c
            LEFT JOIN grants g ON g.uid = u.uid AND g.item_kind = c.kind AND g.item_index = c.item_index
            WHERE c.item_index = 0 AND g.owned IS NOT TRUE
            """)

    public static let refundEventsApplied = SQLReconciliationCheck(
        name: "refund_events_applied",
        summary: "Every recorded purchase is in the state its refund events call for (none left unapplied), "
            + "and every refund, reversal or revoke entry names a recorded event.",
        examinedWhat: "purchases with refund events",
        examinedSQL: """
            SELECT count(*) FROM purchases p
            WHERE EXISTS (SELECT 1 FROM refund_events e
                          WHERE e.store = p.store AND e.environment = p.environment AND e.transaction_id = p.transaction_id)
            """,
        failuresSQL: """
            WITH later_states AS (\(laterStates)),
            -- Per transaction with refund events: whether one revokes it, and the latest refund or reversal.
            events AS (
                SELECT e.transaction_id, e.store, e.environment, bool_or(e.kind = 'family_revoke') AS revoked,
                       (array_agg(e.kind ORDER BY e.signed_at DESC, e.arrival DESC)
                            FILTER (WHERE e.kind IN ('refund', 'refund_reversal')))[1] AS latest_refund
                FROM refund_events e
                GROUP BY e.transaction_id, e.store, e.environment
            ),
            per_purchase AS (
                SELECT p.store, p.environment, p.transaction_id, \(purchaseState) AS state,
                       CASE WHEN p.ownership = 'FAMILY_SHARED' AND e.revoked THEN 'revoked'
                            WHEN e.latest_refund = 'refund' THEN 'refunded'
                            ELSE 'live' END AS target
                FROM purchases p
                \(joinLaterStates)
                LEFT JOIN events e
                  ON e.transaction_id = p.transaction_id AND e.store = p.store AND e.environment = p.environment
            )
            SELECT \(transactionKey("x")), format('journal says %s, its refund events call for %s', x.state, x.target)
            FROM per_purchase x WHERE x.state <> x.target
            UNION ALL
            SELECT 'entry ' || j.entry_id || ' (' || \(transactionKey("j")) || ')',
                   'names refund event ' || j.refund_event_id || ', which is not recorded for this transaction'
            FROM journal_entries j
            LEFT JOIN refund_events e
              ON e.source_event_id = j.refund_event_id AND e.store = j.store AND e.environment = j.environment
             AND e.transaction_id = j.transaction_id
            WHERE j.refund_event_id IS NOT NULL AND e.source_event_id IS NULL
            """)

    public static let equippedItemsOwned = SQLReconciliationCheck(
        name: "equipped_items_owned",
        summary: "Every user's equipped face and background are owned.",
        examinedWhat: "users",
        examinedSQL: "SELECT count(*) FROM users",
        failuresSQL: """
            SELECT u.uid || ' ' || k.kind || ' ' || k.item_index, 'equipped but not owned'
            FROM users u
            CROSS JOIN LATERAL (VALUES ('face', u.equipped_face), ('background', u.equipped_background)) AS k (kind, item_index)
            LEFT JOIN grants g ON g.uid = u.uid AND g.item_kind = k.kind AND g.item_index = k.item_index
            WHERE g.owned IS NOT TRUE
            """)

    public static let notificationsApplied = SQLReconciliationCheck(
        name: "notifications_applied",
        summary: "Every stored store notification that carries a refund, refund reversal or family revoke has "
            + "its refund event, for the same transaction and kind.",
        examinedWhat: "stored notifications",
        examinedSQL: "SELECT count(*) FROM store_notifications",
        failuresSQL: """
            SELECT 'notification ' || n.notification_uuid,
                   CASE WHEN e.source_event_id IS NULL THEN n.refund_kind || ' of ' || n.transaction_id || ' not recorded'
                        ELSE format('recorded as %s of %s, the notification says %s of %s',
                                    e.kind, e.transaction_id, n.refund_kind, n.transaction_id) END
            FROM store_notifications n
            LEFT JOIN refund_events e ON e.source_event_id = n.notification_uuid
            WHERE n.refund_kind IS NOT NULL
              AND (e.source_event_id IS NULL OR e.kind <> n.refund_kind OR e.transaction_id <> n.transaction_id
                   OR e.store <> n.store OR e.environment <> n.environment)
            """)

    /// Purchases and grants name their user without a foreign key (migration 0007 took the checks
    /// off the purchase path); users are never deleted or renamed (a trigger refuses it), and this
    /// proves no row names a user that does not exist.
    public static let noOrphans = SQLReconciliationCheck(
        name: "no_orphans",
        summary: "Every purchase and grant names a registered user, and users cannot be deleted or renamed "
            + "(a trigger enabled ALWAYS refuses it).",
        examinedWhat: "purchases and grants",
        examinedSQL: "SELECT (SELECT count(*) FROM purchases) + (SELECT count(*) FROM grants)",
        failuresSQL: """
            SELECT 'purchase ' || \(transactionKey("p")), 'names user ' || p.uid || ', who is not registered'
            FROM purchases p WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.uid = p.uid)
            UNION ALL
            SELECT 'grant ' || g.uid || ' ' || g.item_kind || ' ' || g.item_index, 'names a user who is not registered'
            FROM grants g WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.uid = g.uid)
            UNION ALL
            SELECT 'users', 'no enabled trigger refusing ' || op.name
            FROM (VALUES ('DELETE', 9), ('TRUNCATE', 32)) AS op (name, bits)
            WHERE NOT EXISTS (
                SELECT 1 FROM pg_trigger tg JOIN pg_proc f ON f.oid = tg.tgfoid
                WHERE tg.tgrelid = 'users'::regclass AND f.proname = 'ledger_refuse_user_removal'
                  AND tg.tgenabled = 'A' AND (tg.tgtype & op.bits) = op.bits
            )
            """)

    public static let appendOnlyEnforced = SQLReconciliationCheck(
        name: "append_only_enforced",
        summary:
            "Every append-only ledger table has triggers refusing UPDATE, DELETE and TRUNCATE, enabled ALWAYS (so that session_replication_role = replica cannot skip them).",
        examinedWhat: "append-only tables",
        examinedSQL: "SELECT count(*) FROM (VALUES \(appendOnlyTables.map { "('\($0)')" }.joined(separator: ", "))) t",
        failuresSQL: """
            SELECT t.name, 'no trigger enabled ALWAYS refusing ' || op.name
            FROM (VALUES \(appendOnlyTables.map { "('\($0)')" }.joined(separator: ", "))) AS t (name)
            CROSS JOIN (VALUES ('UPDATE', 17), ('DELETE', 9), ('TRUNCATE', 32)) AS op (name, bits)
            WHERE NOT EXISTS (
                SELECT 1 FROM pg_trigger tg JOIN pg_proc f ON f.oid = tg.tgfoid
                WHERE tg.tgrelid = to_regclass(t.name) AND f.proname = 'ledger_refuse_change'
                  AND tg.tgenabled = 'A' AND (tg.tgtype & op.bits) = op.bits
            )
            """)

    /// The tables that are never updated or deleted from. A purchase's own journal entry, postings
    /// and grant event are derived from its row; the `journal_entries`, `postings` and
    /// `grant_events` views add them to the stored `*_rows` tables listed here. Apple's imported
    /// sales reports (migration 0014, the AppleSales module), the webhook outbox and delivery attempts
    /// (migration 0016) and the catalog's audit trail (`catalog_changes`, migration 0017) are records too.
    /// The outbox and the attempts have one exception, inside the same trigger function: `webhook_prune`
    /// deletes rows older than the retention window (migration 0018). The backups pgBackRest took
    /// (`backups`, migration 0019) stay recorded too, and so does the console's record of every sign-in
    /// and action (`console_events`, migration 0020), Google Play's purchase tokens and their
    /// acknowledgements (migration 0021), and who posted a pending Play purchase (migration 0023).
    public static let appendOnlyTables = [
        "store_transactions", "purchases", "journal_entry_rows", "posting_rows", "refund_events", "grant_event_rows",
        "store_notifications", "purchase_prices", "support_actions", "apple_sales_reports", "apple_sales_report_rows",
        "webhook_outbox", "webhook_attempts", "catalog_changes", "backups", "console_events", "google_play_purchases",
        "google_play_acknowledgements", "google_play_pending_claims",
    ]
}
