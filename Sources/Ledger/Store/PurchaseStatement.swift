import Foundation
import Postgres
import Receipts

/// The statement that records purchases, written once: the same CTEs record one purchase (its values
/// bound one by one) or a batch of them (group commit: the values as `unnest`ed arrays). Only the
/// `input` CTE differs; every input row carries its position `n`, and one result row comes back per
/// input, in input order.
///
/// Each purchase row, the transaction's marker row and the grant are written by the statement, and
/// the user's appAccountToken if this is their first purchase carrying one
/// (`LedgerStore+AccountToken`). The purchase's journal entry, its postings and its grant event are
/// derived from the purchase row (the `journal_entries`, `postings` and `grant_events` views,
/// migration 0007), so they cannot disagree with it and cost no writes.
///
/// A batch writes its rows in key order (purchases and markers by transaction, grants by user and
/// item, one upsert per grant), so two batches take their row locks in the same order and cannot
/// deadlock each other.
enum PurchaseStatement {
    /// Records one purchase. With `lockingTransaction` false a prior `store_transactions` row (a refund
    /// event came first) fails it with a unique violation; with true it locks that row instead (the
    /// slow path, inside a transaction).
    static func single(_ input: PurchaseInput, lockingTransaction: Bool) -> PostgresQuery {
        """
        WITH input AS (
            SELECT 1::bigint AS n, \(input.store)::text AS store, \(input.environment)::text AS environment,
                   \(input.transactionId)::text AS transaction_id,
                   \(input.originalTransactionId)::text AS original_transaction_id,
                   \(input.uid)::text AS uid, \(input.productId)::text AS product_id, \(input.book)::text AS book,
                   \(input.purchaseDate)::timestamptz AS purchased_at, \(input.priceMilli)::bigint AS price_milli,
                   \(input.currency)::text AS currency, \(input.storefront)::text AS storefront,
                   \(input.ownership)::text AS ownership, \(input.appAccountToken)::uuid AS app_account_token,
                   \(input.signedDate)::timestamptz AS signed_at, \(input.evidence)::bytea AS evidence_sha256,
                   \(input.claimsAccountToken)::boolean AS claims_token
        ),
        \(unsafeSQL: recording(lockingTransaction: lockingTransaction))
        """
    }

    /// Records several new purchases at once (group commit). The inputs must be distinct transactions.
    static func batch(_ inputs: [PurchaseInput]) -> PostgresQuery {
        func column(_ value: (PurchaseInput) -> String?) -> TextArray { TextArray(inputs.map(value)) }
        let store = column { $0.store }
        let environment = column { $0.environment }
        let transactionId = column { $0.transactionId }
        let originalTransactionId = column { $0.originalTransactionId }
        let uid = column { $0.uid }
        let productId = column { $0.productId }
        let book = column { $0.book }
        let purchasedAt = column { text($0.purchaseDate) }
        let priceMilli = column { $0.priceMilli.map(String.init) }
        let currency = column { $0.currency }
        let storefront = column { $0.storefront }
        let ownership = column { $0.ownership }
        let appAccountToken = column { $0.appAccountToken?.uuidString.lowercased() }
        let signedAt = column { text($0.signedDate) }
        let evidence = column { $0.transaction.evidenceSHA256Hex }
        let claimsToken = column { $0.claimsAccountToken ? "true" : "false" }
        return """
            WITH input AS (
                SELECT i.n, i.store, i.environment, i.transaction_id, i.original_transaction_id, i.uid, i.product_id,
                       i.book, i.purchased_at::timestamptz AS purchased_at, i.price_milli::bigint AS price_milli,
                       i.currency, i.storefront, i.ownership, i.app_account_token::uuid AS app_account_token,
                       i.signed_at::timestamptz AS signed_at, decode(i.evidence_hex, 'hex') AS evidence_sha256,
                       i.claims_token::boolean AS claims_token
                FROM unnest(\(store)::text[], \(environment)::text[], \(transactionId)::text[],
                            \(originalTransactionId)::text[], \(uid)::text[], \(productId)::text[], \(book)::text[],
                            \(purchasedAt)::text[], \(priceMilli)::text[], \(currency)::text[], \(storefront)::text[],
                            \(ownership)::text[], \(appAccountToken)::text[], \(signedAt)::text[], \(evidence)::text[],
                            \(claimsToken)::text[])
                     WITH ORDINALITY AS i (store, environment, transaction_id, original_transaction_id, uid, product_id,
                                           book, purchased_at, price_milli, currency, storefront, ownership,
                                           app_account_token, signed_at, evidence_hex, claims_token, n)
            ),
            \(unsafeSQL: recordingBatch)
            """
    }

    /// Everything after `input` (`n`, then the `purchases` columns, `claims_token`): the CTEs that
    /// write, and the result rows (`InsertResult`).
    private static func recording(lockingTransaction: Bool) -> String {
        lockingTransaction ? recordingOneLocking : recordingOne
    }

    private static let recordingOne = recording(.one, onMarkerConflict: "")
    private static let recordingOneLocking = recording(
        .one,
        onMarkerConflict:
            "ON CONFLICT (store, environment, transaction_id) DO UPDATE SET store = EXCLUDED.store WHERE false")
    private static let recordingBatch = recording(.batch, onMarkerConflict: "")

    /// What differs between one purchase and a batch: only a batch orders its rows (the lock order that
    /// keeps two batches from deadlocking), sums several purchases of one grant and joins its CTEs by
    /// position `n`; one purchase joins and answers as the single statement always did. Measured with
    /// pgbench side by side, a single purchase written as a one-row batch cost 5–6% more latency
    /// (docs/measurements.md).
    private enum Rows {
        case one
        case batch

        var purchaseOrder: String { self == .batch ? "ORDER BY i.transaction_id, i.store, i.environment" : "" }
        var markerOrder: String { self == .batch ? "ORDER BY transaction_id, store, environment" : "" }
        var purchaseSource: String {
            self == .batch
                ? "FROM input i JOIN item USING (n) JOIN account a USING (n)" : "FROM input i, item, account a"
        }
        /// The result rows: one per input, in input order.
        var result: String {
            switch self {
            case .one:
                """
                SELECT EXISTS (SELECT 1 FROM account) AS registered, item.kind, item.item_index,
                           (SELECT recorded_at FROM purchase) AS recorded_at,
                           coalesce((SELECT a.known_token = i.app_account_token FROM input i, account a), true)
                               AS token_accepted,
                           \(LedgerStore.refuseLostAccountTokenRace) AS token_race
                    FROM (SELECT 1) AS one LEFT JOIN item ON true
                """
            case .batch:
                """
                SELECT a.n IS NOT NULL AS registered, item.kind, item.item_index, p.recorded_at,
                           coalesce(a.known_token = i.app_account_token, true) AS token_accepted, race.refused
                    FROM input i
                    LEFT JOIN account a USING (n)
                    LEFT JOIN item USING (n)
                    LEFT JOIN purchase p
                      ON p.transaction_id = i.transaction_id AND p.store = i.store AND p.environment = i.environment
                    CROSS JOIN (SELECT \(LedgerStore.refuseLostAccountTokenRace) AS refused) AS race
                    ORDER BY i.n
                """
            }
        }
        var grantRows: String {
            switch self {
            case .one:
                """
                SELECT uid, item_kind, item_index, (ownership = 'PURCHASED')::int, (ownership = 'FAMILY_SHARED')::int
                    FROM purchase
                """
            case .batch:
                """
                SELECT uid, item_kind, item_index, count(*) FILTER (WHERE ownership = 'PURCHASED'),
                           count(*) FILTER (WHERE ownership = 'FAMILY_SHARED')
                    FROM purchase
                    GROUP BY uid, item_kind, item_index
                    ORDER BY uid, item_kind, item_index
                """
            }
        }
    }

    private static func recording(_ rows: Rows, onMarkerConflict: String) -> String {
        """
        item AS (
            -- A retired item is not sold: a purchase dated on or after its retirement finds none (0017).
            -- A Google Play purchase names the item by its Play product id (0021).
            SELECT i.n, c.kind, c.item_index FROM catalog_items c
            JOIN input i ON (i.store <> 'google_play' AND c.product_id = i.product_id)
                         OR (i.store = 'google_play' AND c.google_product_id = i.product_id)
            WHERE c.retired_at IS NULL OR i.purchased_at < c.retired_at
        ),
        account AS (SELECT i.n, u.uid, u.app_account_token AS known_token FROM users u JOIN input i ON u.uid = i.uid),
        purchase AS (
            INSERT INTO purchases (store, environment, transaction_id, original_transaction_id, uid, product_id,
                item_kind, item_index, book, purchased_at, price_milli, currency, storefront, ownership,
                app_account_token, signed_at, evidence_sha256)
            SELECT i.store, i.environment, i.transaction_id, i.original_transaction_id, i.uid, i.product_id,
                item.kind, item.item_index, i.book, i.purchased_at, i.price_milli, i.currency, i.storefront,
                i.ownership, i.app_account_token, i.signed_at, i.evidence_sha256
            \(rows.purchaseSource)
            WHERE coalesce(a.known_token = i.app_account_token, true)
            \(rows.purchaseOrder)
            ON CONFLICT (store, environment, transaction_id) DO NOTHING
            RETURNING store, environment, transaction_id, uid, item_kind, item_index, ownership, app_account_token,
                recorded_at
        ),
        \(LedgerStore.claimAccountTokens),
        marker AS (
            INSERT INTO store_transactions (store, environment, transaction_id)
            SELECT store, environment, transaction_id FROM purchase \(rows.markerOrder)
            \(onMarkerConflict)
        ),
        owned AS (
            INSERT INTO grants AS g (uid, item_kind, item_index, purchased_count, shared_count)
            \(rows.grantRows)
            ON CONFLICT (uid, item_kind, item_index) DO UPDATE
            SET purchased_count = g.purchased_count + EXCLUDED.purchased_count,
                shared_count = g.shared_count + EXCLUDED.shared_count,
                updated_at = now()
        )
        \(rows.result)
        """
    }

    /// A date as the wrapper binds it (timestamptz text).
    private static func text(_ date: Date) -> String {
        if case .text(let text) = date.postgresBind.value { return text }
        return ""
    }
}

/// A `text[]` parameter whose elements may be NULL.
struct TextArray: PostgresEncodable {
    let values: [String?]
    init(_ values: [String?]) { self.values = values }

    static var postgresTypeOID: UInt32 { PostgresType.textArray }
    var postgresBind: PostgresBind {
        PostgresBind(
            .text("{" + values.map { $0?.postgresArrayLiteral ?? "NULL" }.joined(separator: ",") + "}"),
            oid: PostgresType.textArray)
    }
}
