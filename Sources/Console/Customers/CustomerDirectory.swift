import Foundation
import Ledger
import Postgres

/// What support looks customers up by, and what the customer page shows: one timeline of everything
/// that happened to a user, read in one statement (a user with 200 purchases is one round trip, not
/// four per purchase).
public struct CustomerDirectory: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    /// A user a search found, and what matched.
    public struct Match: Sendable, Hashable {
        public var uid: String
        /// `uid`, `transaction_id`, `original_transaction_id` or `app_account_token`.
        public var matchedBy: String
    }

    /// The users whose uid, transaction id, original transaction id or app account token is `query`.
    public func search(_ query: String) async throws -> [Match] {
        let text = query.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty, text.utf8.count <= 128,
            !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { return [] }
        let token = UUID(uuidString: text)
        return try await client.query(
            """
            SELECT uid, 'uid' FROM users WHERE uid = \(text)::text
            UNION
            SELECT uid, 'transaction_id' FROM purchases WHERE transaction_id = \(text)::text
            UNION
            SELECT uid, 'original_transaction_id' FROM purchases WHERE original_transaction_id = \(text)::text
            UNION
            SELECT uid, 'app_account_token' FROM purchases
            WHERE \(token?.uuidString)::uuid IS NOT NULL AND app_account_token = \(token?.uuidString)::uuid
            ORDER BY 1, 2 LIMIT 50
            """
        ).map { row in
            let (uid, by) = try row.decode((String, String).self)
            return Match(uid: uid, matchedBy: by)
        }
    }

    /// One line of a customer's timeline.
    public struct Event: Sendable, Hashable {
        /// `purchase`, `refund`, `refund_reversal`, `family_revoke`, `support_grant`, `support_revoke`, `webhook`.
        public var kind: String
        public var at: Date
        public var transactionId: String?
        public var store: String?
        public var environment: String?
        public var productId: String?
        public var item: String?
        public var priceMilli: Int64?
        public var currency: String?
        /// For support actions: who and why; for webhooks: the event type.
        public var actor: String?
        public var detail: String?
        /// A support grant's id (the revoke button names it), or a webhook event's id.
        public var reference: Int64?
        /// For a support grant: whether a revoke took it back.
        public var revoked: Bool
    }

    /// Everything about `uid`, newest first: purchases, their later entries (refunds, reversals, family
    /// revocations, prices learned later), support grants and revokes, and the webhook events written
    /// about them (`journal_entry_rows` holds every entry but a purchase's own, which its row is). At most `limit` lines.
    public func timeline(of uid: String, limit: Int = 1000) async throws -> [Event] {
        try await client.query(
            """
            SELECT * FROM (
                SELECT 'purchase' AS kind, p.purchased_at AS at, p.transaction_id, p.store, p.environment,
                       p.product_id, p.item_kind || ' ' || p.item_index AS item, p.price_milli, p.currency,
                       NULL::text AS actor, p.book AS detail, NULL::bigint AS reference, false AS revoked
                FROM purchases p WHERE p.uid = \(uid)::text
                UNION ALL
                SELECT j.kind, j.effective_at, j.transaction_id, j.store, j.environment, p.product_id,
                       p.item_kind || ' ' || p.item_index, p.price_milli, p.currency, NULL, j.refund_event_id, NULL, false
                FROM purchases p
                JOIN journal_entry_rows j ON j.transaction_id = p.transaction_id AND j.store = p.store
                                         AND j.environment = p.environment
                WHERE p.uid = \(uid)::text
                UNION ALL
                SELECT 'support_' || a.kind, a.acted_at, a.transaction_id::text, NULL, NULL, NULL,
                       a.item_kind::text || ' ' || a.item_index, NULL, NULL, a.actor, a.reason, a.action_id,
                       EXISTS (SELECT 1 FROM support_actions r WHERE r.revokes = a.action_id)
                FROM support_actions a WHERE a.uid = \(uid)::text
                UNION ALL
                SELECT 'webhook', w.created_at, w.transaction_id, w.store, w.environment, NULL, NULL, NULL, NULL,
                       w.type, NULL, w.event_id, false
                FROM webhook_outbox w WHERE w.uid = \(uid)::text
            ) t
            ORDER BY at DESC, kind LIMIT \(limit)
            """
        ).map { row in
            let (kind, at, transactionId, store, environment, productId, item, price, currency, actor, detail) =
                try row.decode(
                    (String, Date, String?, String?, String?, String?, String?, Int64?, String?, String?, String?).self)
            let reference = try row.decode(Int64?.self, at: 11)
            let revoked = try row.decode(Bool.self, at: 12)
            return Event(
                kind: kind, at: at, transactionId: transactionId, store: store, environment: environment,
                productId: productId, item: item, priceMilli: price, currency: currency, actor: actor, detail: detail,
                reference: reference, revoked: revoked)
        }
    }
}
