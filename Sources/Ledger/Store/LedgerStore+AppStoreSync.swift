import Foundation
import Postgres
import Receipts

extension LedgerStore {
    /// One live App Store purchase per (user, environment), their latest: the transaction ids to ask
    /// Apple's refund history with (it answers for the customer who made the transaction, so one id per
    /// user and environment covers the usual user with one Apple account).
    public func refundCheckAnchors() async throws -> [RefundCheckAnchor] {
        try await client.query(
            """
            SELECT DISTINCT ON (p.uid, p.environment) p.uid, p.environment, p.transaction_id
            FROM purchases p
            WHERE p.store = \(VerifiedTransaction.Store.appStore.rawValue)::text
              AND \(unsafeSQL: Purchase.stateExpression) = 'live'
            ORDER BY p.uid, p.environment, p.purchased_at DESC, p.transaction_id DESC
            """
        ).map { row in
            let (uid, environment, transactionId) = try row.decode((String, String, String).self)
            return RefundCheckAnchor(uid: uid, environment: .init(rawValue: environment), transactionId: transactionId)
        }
    }

    /// The state of a recorded purchase; nil when the transaction is not recorded.
    public func purchaseState(
        store: VerifiedTransaction.Store, environment: StoreEnvironment, transactionId: String
    ) async throws -> PurchaseState? {
        try Validation.identifier(transactionId, what: "transactionId")
        let rows = try await client.query(
            """
            SELECT \(unsafeSQL: Purchase.stateExpression) FROM purchases p
            WHERE p.store = \(store.rawValue)::text AND p.environment = \(environment.rawValue)::text
              AND p.transaction_id = \(transactionId)::text
            """)
        guard let row = rows.first else { return nil }
        let text = try row.decode(String.self, at: 0)
        guard let state = PurchaseState(rawValue: text) else {
            throw PostgresError(code: .decoding, message: "purchase \(transactionId) has an unknown state \(text)")
        }
        return state
    }

    /// Whether a notification with this UUID is in the notification inbox.
    public func isNotificationStored(_ notificationUUID: String) async throws -> Bool {
        try Validation.identifier(notificationUUID, what: "notificationUUID")
        return try await client.query(
            "SELECT EXISTS (SELECT 1 FROM store_notifications WHERE notification_uuid = \(notificationUUID)::text)"
        ).single().decode(Bool.self, at: 0)
    }
}

/// A live App Store purchase whose customer's refund history is worth asking for.
public struct RefundCheckAnchor: Sendable, Hashable {
    public var uid: String
    public var environment: StoreEnvironment
    public var transactionId: String
}
