import Foundation
import Postgres
import Receipts

extension LedgerStore {
    /// Stores a verified store notification as received (`store_notifications`), deduplicated on its
    /// notificationUUID. Nothing else: ``applyNotification(_:)`` acts on it.
    ///
    /// - Returns: `.stored`, or `.duplicate` when a notification with this UUID was stored before (the
    ///   first one is kept as it is).
    /// - Throws: `LedgerError(.invalidInput)` with nothing written, or `PostgresError`.
    public func storeNotification(
        _ notification: VerifiedNotification, signedPayload: String
    ) async throws
        -> NotificationStorage
    {
        try Validation.identifier(notification.notificationUUID, what: "notificationUUID")
        try Validation.evidence(notification.evidenceSHA256)
        let transaction = notification.transaction
        if let transaction {
            try Validation.store(transaction.store, environment: transaction.environment)
            try Validation.identifier(transaction.transactionId, what: "transactionId")
        }
        let store = transaction?.store ?? (notification.environment == .stub ? .stub : .appStore)
        try Validation.store(store, environment: notification.environment)
        for (value, what) in [
            (notification.notificationType.rawValue, "notificationType"), (notification.subtype, "subtype"),
        ] {
            guard let value else { continue }
            guard (1...64).contains(value.utf8.count) else {
                throw LedgerError(.invalidInput, "\(what) must be 1–64 bytes")
            }
        }
        guard !signedPayload.utf8.contains(0) else {
            throw LedgerError(.invalidInput, "the signed payload contains a NUL byte")
        }
        let refundKind = transaction == nil ? nil : RefundEvent.Kind(notificationType: notification.notificationType)
        let inserted = try await client.query(
            """
            INSERT INTO store_notifications (notification_uuid, store, environment, notification_type, subtype,
                signed_at, transaction_id, refund_kind, revocation_reason, evidence_sha256, signed_payload)
            VALUES (\(notification.notificationUUID)::text, \(store.rawValue)::text,
                \(notification.environment.rawValue)::text, \(notification.notificationType.rawValue)::text,
                \(notification.subtype)::text, \(notification.signedDate)::timestamptz, \(transaction?.transactionId)::text,
                \(refundKind?.rawValue)::text, \(transaction?.revocationReason)::integer,
                \(Data(notification.evidenceSHA256))::bytea, \(signedPayload)::text)
            ON CONFLICT (notification_uuid) DO NOTHING
            """)
        return inserted.affectedRows == 1 ? .stored : .duplicate
    }

    /// Applies a stored notification to the ledger: the refund, refund reversal or family revoke it
    /// carries is recorded as the refund event with the same id (idempotent, so applying twice changes
    /// nothing the second time).
    ///
    /// - Returns: nil when the notification asks nothing of the ledger; the refund event's outcome otherwise.
    /// - Throws: `LedgerError(.invalidInput)` when no notification with this UUID is stored, or `PostgresError`.
    public func applyNotification(_ notificationUUID: String) async throws -> RefundEventOutcome? {
        try Validation.identifier(notificationUUID, what: "notificationUUID")
        let rows = try await client.query(
            """
            SELECT refund_kind, store, environment, transaction_id, signed_at, revocation_reason, evidence_sha256
            FROM store_notifications WHERE notification_uuid = \(notificationUUID)::text
            """)
        guard let row = rows.first else {
            throw LedgerError(.invalidInput, "no notification \(notificationUUID) is stored")
        }
        guard let kindText = try row.decode(String?.self, at: 0) else { return nil }
        let (_, store, environment, transactionId, signedAt, reason, evidence) =
            try row.decode((String?, String, String, String, Date, Int32?, Data).self)
        guard let kind = RefundEvent.Kind(rawValue: kindText) else {
            throw PostgresError(code: .decoding, message: "store_notifications has an unknown refund kind \(kindText)")
        }
        return try await recordRefundEvent(
            RefundEvent(
                sourceEventId: notificationUUID, kind: kind, store: .init(rawValue: store),
                environment: .init(rawValue: environment), transactionId: transactionId, signedDate: signedAt,
                revocationReason: reason, evidenceSHA256: Array(evidence)))
    }

    /// The UUIDs of stored notifications that carry a refund event not yet recorded, oldest first.
    public func unappliedNotifications(limit: Int = 100) async throws -> [String] {
        try await client.query(
            """
            SELECT n.notification_uuid FROM store_notifications n
            WHERE n.refund_kind IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM refund_events e WHERE e.source_event_id = n.notification_uuid)
            ORDER BY n.received_at, n.notification_uuid
            LIMIT \(max(1, limit))
            """
        ).map { try $0.decode(String.self, at: 0) }
    }
}

/// The result of ``LedgerStore/storeNotification(_:signedPayload:)``.
public enum NotificationStorage: String, Sendable, Hashable {
    /// Stored now.
    case stored
    /// A notification with this UUID was stored before; it is kept as it was.
    case duplicate
}

extension RefundEvent.Kind {
    /// The refund event kind a notification type carries: `REFUND`, `REFUND_REVERSED` and `REVOKE`; nil for
    /// every other type (nothing for the ledger to do).
    public init?(notificationType: VerifiedNotification.NotificationType) {
        switch notificationType {
        case .refund: self = .refund
        case .refundReversed: self = .refundReversal
        case .revoke: self = .familyRevoke
        default: return nil
        }
    }
}
