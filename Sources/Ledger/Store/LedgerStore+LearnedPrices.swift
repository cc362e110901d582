import Foundation
import Logging
import Postgres
import Receipts

extension LedgerStore {
    /// Books the price the store's signed transaction states for a purchase recorded without one (a
    /// classic receipt's entry recorded while the App Store Server API did not answer), as a new
    /// `price_learned` journal entry: the purchase row is never changed (migration 0008).
    ///
    /// The entry takes effect when the store signed the price, and books receivable +price and
    /// revenue -price; if the purchase is refunded at that moment (its refund posted nothing), it
    /// books that refund too (refunds +price, receivable -price), so net revenue stays zero. Refunds
    /// and reversals after it post the learned price.
    ///
    /// Idempotent: the same price again is a `duplicate`; another price for a purchase that has one
    /// (recorded with it, or learned before) is a `conflict`, logged, and nothing is written. Runs
    /// under the transaction's `store_transactions` row lock, like refunds, so a price and a refund
    /// arriving together are booked one after the other.
    ///
    /// - Throws: `LedgerError(.invalidInput)` (bad values, or a transaction without a price) with
    ///   nothing written, or `PostgresError`.
    public func recordLearnedPrice(_ transaction: VerifiedTransaction) async throws -> PriceOutcome {
        try Validation.transaction(transaction)
        guard let priceMilli = transaction.priceMilli, let currency = transaction.currency else {
            throw LedgerError(.invalidInput, "transaction \(transaction.transactionId) states no price")
        }
        let stated = Money(amountMilli: priceMilli, currency: currency)
        let store = transaction.store.rawValue
        let environment = transaction.environment.rawValue
        let transactionId = transaction.transactionId
        let row = try await client.withTransaction(.retrying(3)) { connection in
            // The transaction's lock first; the statement below then sees every entry committed before it.
            try await connection.query(
                """
                SELECT 1 FROM store_transactions
                WHERE store = \(store)::text AND environment = \(environment)::text
                  AND transaction_id = \(transactionId)::text
                FOR UPDATE
                """)
            try await betweenStatements?("price-before-booking", connection)
            return try await connection.query(
                """
                WITH purchase AS (
                    SELECT p.store, p.environment, p.transaction_id, p.uid, p.book, p.item_kind, p.ownership,
                           p.price_milli, p.currency,
                           p.product_id = \(transaction.productId)::text
                           AND p.original_transaction_id = \(transaction.originalTransactionId)::text
                           AND date_trunc('second', p.purchased_at)
                               = date_trunc('second', \(transaction.purchaseDate)::timestamptz) AS same_purchase
                    FROM purchases p
                    WHERE p.store = \(store)::text AND p.environment = \(environment)::text
                      AND p.transaction_id = \(transactionId)::text
                ),
                known AS (
                    SELECT coalesce(p.price_milli, l.price_milli) AS price_milli, coalesce(p.currency, l.currency) AS currency
                    FROM purchase p
                    LEFT JOIN purchase_prices l USING (transaction_id, store, environment)
                ),
                history AS (
                    SELECT max(j.seq) AS seq,
                           (array_agg(purchase_state_after(j.kind) ORDER BY j.seq DESC)
                               FILTER (WHERE j.kind <> 'price_learned'))[1] AS state
                    FROM journal_entries j JOIN purchase p USING (store, environment, transaction_id)
                ),
                change AS (
                    SELECT p.*, h.seq + 1 AS seq, h.state
                    FROM purchase p, history h, known k
                    WHERE p.same_purchase AND p.ownership = 'PURCHASED' AND k.price_milli IS NULL
                ),
                entry AS (
                    INSERT INTO journal_entry_rows (store, environment, transaction_id, seq, kind, uid, book, effective_at)
                    SELECT store, environment, transaction_id, seq, 'price_learned', uid, book,
                           \(transaction.signedDate)::timestamptz
                    FROM change
                    RETURNING transaction_id, entry_id
                ),
                legs AS (
                    INSERT INTO posting_rows (transaction_id, entry_id, leg, account, currency, amount_milli)
                    SELECT e.transaction_id, e.entry_id, v.leg, v.account, \(currency)::text, v.amount
                    FROM entry e JOIN change c USING (transaction_id)
                    CROSS JOIN LATERAL (VALUES
                        (1, ledger_account(c.book, 'receivable:' || c.store), \(priceMilli)::bigint),
                        (2, ledger_account(c.book, 'revenue:' || c.item_kind), -\(priceMilli)::bigint),
                        (3, ledger_account(c.book, 'refunds:' || c.item_kind), \(priceMilli)::bigint),
                        (4, ledger_account(c.book, 'receivable:' || c.store), -\(priceMilli)::bigint)
                    ) AS v (leg, account, amount)
                    WHERE \(priceMilli)::bigint > 0 AND (v.leg <= 2 OR c.state = 'refunded')
                ),
                priced AS (
                    INSERT INTO purchase_prices (transaction_id, store, environment, price_milli, currency, storefront,
                        signed_at, evidence_sha256, entry_id)
                    SELECT e.transaction_id, c.store, c.environment, \(priceMilli)::bigint, \(currency)::text,
                           \(transaction.storefront)::text, \(transaction.signedDate)::timestamptz,
                           \(Data(transaction.evidenceSHA256))::bytea, e.entry_id
                    FROM entry e JOIN change c USING (transaction_id)
                )
                SELECT EXISTS (SELECT 1 FROM purchase), coalesce((SELECT same_purchase FROM purchase), false),
                       coalesce((SELECT ownership = 'FAMILY_SHARED' FROM purchase), false),
                       (SELECT price_milli FROM known), (SELECT currency FROM known), EXISTS (SELECT 1 FROM entry)
                """
            ).single()
        }
        let (found, samePurchase, familyShared, knownPrice, knownCurrency, booked) =
            try row.decode((Bool, Bool, Bool, Int64?, String?, Bool).self)
        guard found else { return .notRecorded }
        guard samePurchase else { return .evidenceDiffers }
        if familyShared { return .familyShared }
        if booked { return .recorded(stated) }
        guard let knownPrice, let knownCurrency else {
            throw PostgresError(
                code: .unexpectedResponse, message: "purchase \(transactionId) was neither priced nor found priced")
        }
        let known = Money(amountMilli: knownPrice, currency: knownCurrency)
        guard known == stated else {
            logger.warning(
                "the store states another price than the one recorded; nothing written",
                metadata: [
                    "transaction": "\(transactionId)", "recorded": "\(known.amountMilli) \(known.currency)",
                    "stated": "\(stated.amountMilli) \(stated.currency)",
                ])
            return .conflict(recorded: known, stated: stated)
        }
        return .duplicate(known)
    }
}
