import Foundation
import Logging
import Postgres
import Receipts

/// Support actions (migration 0010): compensation grants and their revocation, each one statement
/// that writes the action, its grant event and the grant row together, and the look-ups support
/// needs. Nothing here writes a journal entry or a posting: a compensation is never revenue.
extension LedgerStore {
    /// Grants `item` to `uid` as compensation.
    /// - Throws: `LedgerError` `.invalidInput` (no reason, bad actor), `.userNotRegistered`,
    ///   `.noSuchItem` (free items are everyone's already); nothing is written then.
    public func grantCompensation(
        _ item: ItemID, to uid: String, _ request: SupportRequest
    ) async throws
        -> SupportAction
    {
        try Validation.uid(uid)
        try request.validate()
        guard item.index > 0 else {
            throw LedgerError(.noSuchItem, "\(item) is a free item: every user owns it already")
        }
        let row = try await client.query(
            """
            WITH input AS (
                SELECT u.uid, c.kind, c.item_index
                FROM users u, catalog_items c
                WHERE u.uid = \(uid)::text AND c.kind = \(item.kind.rawValue)::text AND c.item_index = \(item.index)
            ),
            action AS (
                INSERT INTO support_actions (kind, uid, item_kind, item_index, actor, reason, transaction_id)
                SELECT 'grant', uid, kind, item_index, \(request.actor)::text, \(request.reason)::text,
                       \(request.transactionId)::text
                FROM input
                RETURNING action_id, uid, item_kind, item_index, acted_at
            ),
            owned AS (
                INSERT INTO grants AS g (uid, item_kind, item_index, promotional_count)
                SELECT uid, item_kind, item_index, 1 FROM action
                ON CONFLICT (uid, item_kind, item_index) DO UPDATE
                SET promotional_count = g.promotional_count + 1, updated_at = now()
            ),
            history AS (
                INSERT INTO grant_event_rows (uid, item_kind, item_index, source, delta, cause, entry_id)
                SELECT uid, item_kind, item_index, 'promotional', 1, 'support_grant', action_id FROM action
            )
            SELECT EXISTS (SELECT 1 FROM users WHERE uid = \(uid)::text),
                   (SELECT action_id FROM action), (SELECT acted_at FROM action)
            """
        ).single()
        let (registered, actionId, actedAt) = try row.decode((Bool, Int64?, Date?).self)
        guard registered else { throw LedgerError.userNotRegistered(uid) }
        guard let actionId, let actedAt else { throw LedgerError(.noSuchItem, "the catalog has no \(item)") }
        logger.info(
            "support grant", metadata: ["action": "\(actionId)", "uid": "\(uid)", "item": "\(item)"])
        return SupportAction(
            actionId: actionId, kind: .grant, uid: uid, item: item, revokes: nil, actor: request.actor,
            reason: request.reason, transactionId: request.transactionId, actedAt: actedAt)
    }

    /// Revokes compensation grant `grantId`: the item is no longer owned through it (and is
    /// unequipped when nothing else backs it).
    /// - Throws: `LedgerError` `.invalidInput`, `.noSuchGrant` (no such grant action),
    ///   `.alreadyRevoked`; nothing is written then.
    public func revokeCompensation(_ grantId: Int64, _ request: SupportRequest) async throws -> SupportAction {
        try request.validate()
        let row = try await client.query(
            """
            WITH target AS (
                SELECT action_id, uid, item_kind, item_index FROM support_actions
                WHERE action_id = \(grantId) AND kind = 'grant'
            ),
            action AS (
                INSERT INTO support_actions (kind, uid, item_kind, item_index, revokes, actor, reason, transaction_id)
                SELECT 'revoke', uid, item_kind, item_index, action_id, \(request.actor)::text, \(request.reason)::text,
                       \(request.transactionId)::text
                FROM target
                ON CONFLICT (revokes) DO NOTHING
                RETURNING action_id, uid, item_kind, item_index, acted_at
            ),
            owned AS (
                UPDATE grants g SET promotional_count = g.promotional_count - 1, updated_at = now()
                FROM action a
                WHERE g.uid = a.uid AND g.item_kind = a.item_kind AND g.item_index = a.item_index
                RETURNING g.uid, g.item_kind, g.item_index, g.owned
            ),
            history AS (
                INSERT INTO grant_event_rows (uid, item_kind, item_index, source, delta, cause, entry_id)
                SELECT uid, item_kind, item_index, 'promotional', -1, 'support_revoke', action_id FROM action
            ),
            unequip AS (\(unsafeSQL: Self.unequipLostItems))
            SELECT (SELECT uid FROM target), (SELECT item_kind::text FROM target), (SELECT item_index FROM target),
                   (SELECT action_id FROM action), (SELECT acted_at FROM action)
            """
        ).single()
        let (uid, kindText, index, actionId, actedAt) = try row.decode((String?, String?, Int?, Int64?, Date?).self)
        guard let uid, let kindText, let kind = ItemKind(rawValue: kindText), let index else {
            throw LedgerError(.noSuchGrant, "no support grant has id \(grantId)")
        }
        guard let actionId, let actedAt else {
            throw LedgerError(.alreadyRevoked, "support grant \(grantId) was revoked already")
        }
        logger.info("support revoke", metadata: ["action": "\(actionId)", "grant": "\(grantId)", "uid": "\(uid)"])
        return SupportAction(
            actionId: actionId, kind: .revoke, uid: uid, item: ItemID(kind: kind, index: index), revokes: grantId,
            actor: request.actor, reason: request.reason, transactionId: request.transactionId, actedAt: actedAt)
    }

    /// The body of a CTE that un-equips what a user no longer owns, after a CTE `owned` returning
    /// the changed grant rows (`uid, item_kind, item_index, owned`). A user cannot show what they no
    /// longer own. Matching the row on uid only (not on the equipped value) makes a concurrent
    /// equip's committed value the one re-checked. Refunds and support revokes share it.
    static let unequipLostItems = """
        UPDATE users u
        SET equipped_face = CASE WHEN o.item_kind = 'face' AND u.equipped_face = o.item_index
                                 THEN 0 ELSE u.equipped_face END,
            equipped_background = CASE WHEN o.item_kind = 'background' AND u.equipped_background = o.item_index
                                       THEN 0 ELSE u.equipped_background END
        FROM owned o
        WHERE u.uid = o.uid AND NOT o.owned
        """

    /// The user's support actions, oldest first, each grant with the revoke that took it back.
    /// - Throws: `LedgerError(.userNotRegistered)`.
    public func supportActions(of uid: String) async throws -> [SupportAction] {
        try Validation.uid(uid)
        guard try await user(uid) != nil else { throw LedgerError.userNotRegistered(uid) }
        return try await supportActions(whereColumn: "uid", is: uid)
    }

    /// The purchases whose transaction id or original transaction id is `id` (every store and
    /// environment), oldest first, each with its whole history.
    public func lookUpPurchases(_ id: String) async throws -> [PurchaseRecord] {
        try Validation.identifier(id, what: "transactionId")
        let rows = try await client.query(
            """
            SELECT \(unsafeSQL: Purchase.selectColumns) FROM purchases p
            WHERE p.transaction_id = \(id)::text OR p.original_transaction_id = \(id)::text
            ORDER BY p.purchased_at, p.transaction_id
            """)
        var records: [PurchaseRecord] = []
        for row in rows { records.append(try await history(of: try Purchase(row: row))) }
        return records
    }

    /// The user's purchases, oldest first, each with its whole history.
    /// - Throws: `LedgerError(.userNotRegistered)`.
    public func purchaseRecords(of uid: String) async throws -> [PurchaseRecord] {
        var records: [PurchaseRecord] = []
        for purchase in try await purchaseHistory(of: uid) { records.append(try await history(of: purchase)) }
        return records
    }

    private func history(of purchase: Purchase) async throws -> PurchaseRecord {
        let (store, environment, id) = (purchase.store.rawValue, purchase.environment.rawValue, purchase.transactionId)
        let entries = try await client.query(
            """
            SELECT entry_id, seq::int, kind, effective_at, recorded_at, refund_event_id FROM journal_entries
            WHERE transaction_id = \(id)::text AND store = \(store)::text AND environment = \(environment)::text
            ORDER BY seq
            """
        ).map { row in
            let (entryId, seq, kind, effectiveAt, recordedAt, eventId) = try row.decode(
                (Int64, Int, String, Date, Date, String?).self)
            guard let kind = JournalEntryKind(rawValue: kind) else {
                throw PostgresError(code: .decoding, message: "journal entry \(entryId) has kind \(kind)")
            }
            return PurchaseRecord.Entry(
                entryId: entryId, seq: seq, kind: kind, effectiveAt: effectiveAt, recordedAt: recordedAt,
                refundEventId: eventId)
        }
        let events = try await client.query(
            """
            SELECT source_event_id, kind, signed_at, received_at, revocation_reason FROM refund_events
            WHERE transaction_id = \(id)::text AND store = \(store)::text AND environment = \(environment)::text
            ORDER BY signed_at, arrival
            """
        ).map { row in
            let (eventId, kind, signedAt, receivedAt, reason) = try row.decode((String, String, Date, Date, Int?).self)
            return PurchaseRecord.StoreEvent(
                sourceEventId: eventId, kind: kind, signedAt: signedAt, receivedAt: receivedAt,
                revocationReason: reason)
        }
        let changes = try await client.query(
            """
            SELECT event_id, delta::int, cause, recorded_at FROM grant_events
            WHERE uid = \(purchase.uid)::text AND transaction_id = \(id)::text AND store = \(store)::text
              AND environment = \(environment)::text
            ORDER BY event_id
            """
        ).map { row in
            let (eventId, delta, cause, recordedAt) = try row.decode((Int64, Int, String, Date).self)
            return PurchaseRecord.GrantChange(eventId: eventId, delta: delta, cause: cause, recordedAt: recordedAt)
        }
        let actions = try await supportActions(whereColumn: "transaction_id", is: id)
        return PurchaseRecord(
            purchase: purchase, entries: entries, storeEvents: events, grantChanges: changes, supportActions: actions)
    }

    /// Support actions whose `column` (`uid` or `transaction_id`, never input) equals `value`.
    private func supportActions(whereColumn column: StaticString, is value: String) async throws -> [SupportAction] {
        let rows = try await client.query(
            """
            SELECT a.action_id, a.kind, a.uid, a.item_kind::text, a.item_index::int, a.revokes, a.actor,
                   a.reason, a.transaction_id::text, a.acted_at,
                   (SELECT r.action_id FROM support_actions r WHERE r.revokes = a.action_id)
            FROM support_actions a WHERE a.\(unsafeSQL: "\(column)") = \(value)::text ORDER BY a.action_id
            """)
        return try rows.map { row in
            let (actionId, kindText, uid, itemKind, index, revokes, actor, reason, transactionId, actedAt, revokedBy) =
                try row.decode((Int64, String, String, String, Int, Int64?, String, String, String?, Date, Int64?).self)
            guard let kind = SupportAction.Kind(rawValue: kindText), let itemKind = ItemKind(rawValue: itemKind) else {
                throw PostgresError(code: .decoding, message: "support action \(actionId) has kind \(kindText)")
            }
            return SupportAction(
                actionId: actionId, kind: kind, uid: uid, item: ItemID(kind: itemKind, index: index), revokes: revokes,
                actor: actor, reason: reason, transactionId: transactionId, actedAt: actedAt, revokedBy: revokedBy)
        }
    }
}
