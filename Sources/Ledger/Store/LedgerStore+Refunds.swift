import Foundation
import Postgres
import Receipts

extension LedgerStore {
    /// Records a refund, refund reversal or family revoke, identified by its source event id, and
    /// applies it to the purchase when that is recorded (otherwise it is kept and applied when the
    /// purchase arrives).
    ///
    /// A purchase's state follows its events: the latest refund or reversal by signed date decides
    /// refunded or live (so late, out-of-order deliveries cannot undo newer ones), and a family
    /// revoke of a family-shared purchase revokes it for good. Each change is one journal entry with
    /// its postings and grant change, in one transaction under the store transaction's row lock.
    ///
    /// - Throws: `LedgerError(.invalidInput)` with nothing written, or `PostgresError`.
    public func recordRefundEvent(_ event: RefundEvent) async throws -> RefundEventOutcome {
        try Validation.refundEvent(event)
        let store = event.store.rawValue
        let environment = event.environment.rawValue
        let transactionId = event.transactionId
        let fresh: RefundEventOutcome? = try await client.withTransaction(.retrying(3)) { connection in
            let inserted = try await connection.query(
                """
                WITH event AS (
                    INSERT INTO refund_events (source_event_id, kind, store, environment, transaction_id, signed_at,
                        revocation_reason, evidence_sha256)
                    VALUES (\(event.sourceEventId)::text, \(event.kind.rawValue)::text, \(store)::text,
                        \(environment)::text, \(transactionId)::text, \(event.signedDate)::timestamptz,
                        \(event.revocationReason)::integer, \(Data(event.evidenceSHA256))::bytea)
                    ON CONFLICT (source_event_id) DO NOTHING
                    RETURNING store, environment, transaction_id
                ),
                marker AS (
                    -- Inserts the transaction's row, or locks it: state changes of one transaction
                    -- happen one at a time, and a purchase arriving now waits for this event.
                    INSERT INTO store_transactions (store, environment, transaction_id)
                    SELECT store, environment, transaction_id FROM event
                    ON CONFLICT (store, environment, transaction_id) DO UPDATE SET store = EXCLUDED.store WHERE false
                )
                SELECT EXISTS (SELECT 1 FROM event)
                """
            ).single().decode(Bool.self, at: 0)
            guard inserted else { return nil }
            try await betweenStatements?("refund-event-before-application", connection)
            let state = try await applyRefundEvents(
                store: store, environment: environment, transactionId: transactionId, on: connection)
            return state.map(RefundEventOutcome.applied) ?? .parked
        }
        if let fresh { return fresh }

        // Received before: the same event is a duplicate, another one under the same id a conflict.
        let row = try await client.query(
            """
            SELECT e.kind = \(event.kind.rawValue)::text AND e.store = \(store)::text
                   AND e.environment = \(environment)::text AND e.transaction_id = \(transactionId)::text,
                   (SELECT \(unsafeSQL: Purchase.stateExpression)
                    FROM purchases p
                    WHERE p.store = e.store AND p.environment = e.environment AND p.transaction_id = e.transaction_id)
            FROM refund_events e WHERE e.source_event_id = \(event.sourceEventId)::text
            """
        ).single()
        let (same, stateText) = try row.decode((Bool, String?).self)
        guard same else { return .conflict }
        return .duplicate(stateText.flatMap(PurchaseState.init(rawValue:)))
    }

    /// Brings a recorded purchase to the state its refund events call for, writing at most one
    /// journal entry (with postings, the grant change, its history and un-equipping a lost item).
    /// The caller must hold the transaction's `store_transactions` row lock and run this as a
    /// statement of its own, so its snapshot sees every event committed before the lock.
    ///
    /// - Returns: the purchase's state afterwards; nil when the purchase is not recorded.
    func applyRefundEvents(
        store: String, environment: String, transactionId: String, on connection: PostgresConnection
    ) async throws -> PurchaseState? {
        let row = try await connection.query(
            """
            WITH purchase AS (
                -- A price learned later (migration 0008) is refunded like the purchase's own.
                SELECT p.store, p.environment, p.transaction_id, p.uid, p.item_kind, p.item_index, p.book,
                       coalesce(p.price_milli, l.price_milli) AS price_milli, coalesce(p.currency, l.currency) AS currency,
                       p.ownership
                FROM purchases p
                LEFT JOIN purchase_prices l USING (transaction_id, store, environment)
                WHERE p.store = \(store)::text AND p.environment = \(environment)::text
                  AND p.transaction_id = \(transactionId)::text
            ),
            latest_entry AS (
                -- The next entry's number follows every entry; the state is the latest that has one.
                SELECT max(j.seq) AS seq,
                       (array_agg(purchase_state_after(j.kind) ORDER BY j.seq DESC)
                           FILTER (WHERE j.kind <> 'price_learned'))[1] AS state
                FROM journal_entries j JOIN purchase p USING (store, environment, transaction_id)
                HAVING count(*) > 0
            ),
            events AS (
                SELECT e.source_event_id, e.kind, e.signed_at, e.arrival
                FROM refund_events e JOIN purchase p USING (store, environment, transaction_id)
            ),
            latest_refund AS (
                SELECT source_event_id, kind, signed_at FROM events WHERE kind IN ('refund', 'refund_reversal')
                ORDER BY signed_at DESC, arrival DESC LIMIT 1
            ),
            first_revoke AS (
                SELECT source_event_id, signed_at FROM events WHERE kind = 'family_revoke'
                ORDER BY signed_at, arrival LIMIT 1
            ),
            target AS (
                SELECT CASE WHEN revoked THEN 'revoked' WHEN lr.kind = 'refund' THEN 'refunded' ELSE 'live' END AS state,
                       CASE WHEN revoked THEN rv.source_event_id ELSE lr.source_event_id END AS event_id,
                       CASE WHEN revoked THEN rv.signed_at ELSE lr.signed_at END AS signed_at
                FROM purchase p
                LEFT JOIN latest_refund lr ON true
                LEFT JOIN first_revoke rv ON true
                CROSS JOIN LATERAL (SELECT p.ownership = 'FAMILY_SHARED' AND rv.source_event_id IS NOT NULL AS revoked) r
            ),
            change AS (
                SELECT p.*, le.seq + 1 AS seq, t.event_id, t.signed_at,
                    CASE t.state WHEN 'refunded' THEN 'refund' WHEN 'live' THEN 'refund_reversal' ELSE 'family_revoke' END AS entry_kind,
                    CASE WHEN le.state = 'live' THEN -1 WHEN t.state = 'live' THEN 1 ELSE 0 END AS grant_delta,
                    CASE WHEN p.ownership <> 'PURCHASED' OR coalesce(p.price_milli, 0) = 0 THEN 0
                         WHEN le.state = 'live' AND t.state = 'refunded' THEN -1
                         WHEN le.state = 'refunded' AND t.state = 'live' THEN 1
                         ELSE 0 END AS money_sign,
                    t.state AS new_state
                FROM purchase p, latest_entry le, target t
                WHERE le.state <> t.state AND le.state <> 'revoked'
            ),
            entry AS (
                INSERT INTO journal_entry_rows (store, environment, transaction_id, seq, kind, uid, book, refund_event_id, effective_at)
                SELECT store, environment, transaction_id, seq, entry_kind, uid, book, event_id, signed_at FROM change
                RETURNING transaction_id, entry_id
            ),
            legs AS (
                INSERT INTO posting_rows (transaction_id, entry_id, leg, account, currency, amount_milli)
                SELECT e.transaction_id, e.entry_id, v.leg, v.account, c.currency, v.amount
                FROM entry e JOIN change c USING (transaction_id)
                CROSS JOIN LATERAL (VALUES
                    (1, ledger_account(c.book, 'receivable:' || c.store), c.money_sign * c.price_milli),
                    (2, ledger_account(c.book, 'refunds:' || c.item_kind), -c.money_sign * c.price_milli)
                ) AS v (leg, account, amount)
                WHERE c.money_sign <> 0
            ),
            owned AS (
                UPDATE grants g
                SET purchased_count = g.purchased_count + CASE WHEN c.ownership = 'PURCHASED' THEN c.grant_delta ELSE 0 END,
                    shared_count = g.shared_count + CASE WHEN c.ownership = 'FAMILY_SHARED' THEN c.grant_delta ELSE 0 END,
                    updated_at = now()
                FROM change c
                WHERE c.grant_delta <> 0
                  AND g.uid = c.uid AND g.item_kind = c.item_kind AND g.item_index = c.item_index
                RETURNING g.uid, g.item_kind, g.item_index, g.owned
            ),
            history AS (
                INSERT INTO grant_event_rows (uid, item_kind, item_index, source, delta, cause, store, environment,
                    transaction_id, entry_id)
                SELECT c.uid, c.item_kind, c.item_index,
                    CASE c.ownership WHEN 'PURCHASED' THEN 'purchased' ELSE 'family_shared' END,
                    c.grant_delta, c.entry_kind, c.store, c.environment, c.transaction_id, e.entry_id
                FROM change c JOIN entry e USING (transaction_id)
                WHERE c.grant_delta <> 0
            ),
            unequip AS (\(unsafeSQL: Self.unequipLostItems))
            SELECT EXISTS (SELECT 1 FROM purchase),
                   coalesce((SELECT new_state FROM change), (SELECT state FROM latest_entry))
            """
        ).single()
        let (found, stateText) = try row.decode((Bool, String?).self)
        guard found else { return nil }
        guard let stateText, let state = PurchaseState(rawValue: stateText) else {
            throw PostgresError(code: .unexpectedResponse, message: "purchase \(transactionId) has no journal entry")
        }
        return state
    }
}
