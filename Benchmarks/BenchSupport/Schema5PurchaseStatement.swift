import Foundation
import Ledger
import Postgres
import Receipts

/// The purchase statement as `LedgerStore.recordPurchase` sent it before migration 0007 (the lean
/// write path), frozen here so that LedgerBench can drive the schema of migrations 1–6 with its own
/// statement beside the current one, in the same run. Not used by the server.
public enum Schema5 {
    /// The last migration of that schema (0006 only made the append-only triggers fire always).
    public static let lastMigration = 6

    /// The statement for a new purchase of `transaction` by `uid`, text and bindings as it was sent.
    public static func newPurchaseStatement(_ transaction: VerifiedTransaction, for uid: String) -> PostgresQuery {
        let book = LedgerBook.name(store: transaction.store, environment: transaction.environment)
        return """
            WITH input AS (
                SELECT \(transaction.store.rawValue)::text AS store, \(transaction.environment.rawValue)::text AS environment,
                       \(transaction.transactionId)::text AS transaction_id,
                       \(transaction.originalTransactionId)::text AS original_transaction_id,
                       \(uid)::text AS uid, \(transaction.productId)::text AS product_id, \(book)::text AS book,
                       \(transaction.purchaseDate)::timestamptz AS purchased_at, \(transaction.priceMilli)::bigint AS price_milli,
                       \(transaction.currency)::text AS currency, \(transaction.storefront)::text AS storefront,
                       \(transaction.ownershipType.rawValue)::text AS ownership, \(transaction.appAccountToken)::uuid AS app_account_token,
                       \(transaction.signedDate)::timestamptz AS signed_at, \(Data(transaction.evidenceSHA256))::bytea AS evidence_sha256
            ),
            item AS (SELECT c.kind, c.item_index FROM catalog_items c JOIN input i ON c.product_id = i.product_id),
            account AS (SELECT u.uid FROM users u JOIN input i ON u.uid = i.uid),
            purchase AS (
                INSERT INTO purchases (store, environment, transaction_id, original_transaction_id, uid, product_id,
                    item_kind, item_index, book, purchased_at, price_milli, currency, storefront, ownership,
                    app_account_token, signed_at, evidence_sha256)
                SELECT i.store, i.environment, i.transaction_id, i.original_transaction_id, i.uid, i.product_id,
                    item.kind, item.item_index, i.book, i.purchased_at, i.price_milli, i.currency, i.storefront,
                    i.ownership, i.app_account_token, i.signed_at, i.evidence_sha256
                FROM input i, item, account
                ON CONFLICT (store, environment, transaction_id) DO NOTHING
                RETURNING store, environment, transaction_id, uid, item_kind, item_index, book, purchased_at,
                    price_milli, currency, ownership, recorded_at
            ),
            marker AS (
                INSERT INTO store_transactions (store, environment, transaction_id)
                SELECT store, environment, transaction_id FROM purchase
            ),
            entry AS (
                INSERT INTO journal_entries (store, environment, transaction_id, seq, kind, uid, book, effective_at)
                SELECT store, environment, transaction_id, 0, 'purchase', uid, book, purchased_at FROM purchase
                RETURNING transaction_id, entry_id
            ),
            legs AS (
                INSERT INTO postings (transaction_id, entry_id, leg, account, currency, amount_milli)
                SELECT e.transaction_id, e.entry_id, v.leg, v.account, p.currency, v.amount
                FROM entry e JOIN purchase p USING (transaction_id)
                CROSS JOIN LATERAL (VALUES
                    (1, ledger_account(p.book, 'receivable:' || p.store), p.price_milli),
                    (2, ledger_account(p.book, 'revenue:' || p.item_kind), -p.price_milli)
                ) AS v (leg, account, amount)
                WHERE p.ownership = 'PURCHASED' AND p.price_milli > 0
            ),
            owned AS (
                INSERT INTO grants AS g (uid, item_kind, item_index, purchased_count, shared_count)
                SELECT uid, item_kind, item_index, (ownership = 'PURCHASED')::int, (ownership = 'FAMILY_SHARED')::int
                FROM purchase
                ON CONFLICT (uid, item_kind, item_index) DO UPDATE
                SET purchased_count = g.purchased_count + EXCLUDED.purchased_count,
                    shared_count = g.shared_count + EXCLUDED.shared_count,
                    updated_at = now()
            ),
            history AS (
                INSERT INTO grant_events (uid, item_kind, item_index, source, delta, cause, store, environment,
                    transaction_id, entry_id)
                SELECT p.uid, p.item_kind, p.item_index,
                    CASE p.ownership WHEN 'PURCHASED' THEN 'purchased' ELSE 'family_shared' END, 1, 'purchase',
                    p.store, p.environment, p.transaction_id, e.entry_id
                FROM purchase p JOIN entry e USING (transaction_id)
            )
            SELECT EXISTS (SELECT 1 FROM account) AS registered, item.kind, item.item_index,
                   (SELECT recorded_at FROM purchase) AS recorded_at
            FROM (SELECT 1) AS one LEFT JOIN item ON true
            """
    }
}
