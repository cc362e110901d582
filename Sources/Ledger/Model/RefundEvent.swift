import Foundation
import Receipts

/// A store's word that a transaction was refunded, its refund reversed, or its family sharing
/// revoked. Identified by the source's event id (Apple's `notificationUUID`), so receiving it again
/// changes nothing.
public struct RefundEvent: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// The purchase was refunded: it stops backing its item, its money moves to `refunds:<kind>`.
        case refund
        /// A refund was reversed: the purchase is live again.
        case refundReversal = "refund_reversal"
        /// Family sharing of the purchase was revoked: only a family-shared purchase is affected.
        case familyRevoke = "family_revoke"
    }

    /// The source's id of this event (e.g. Apple's `notificationUUID`).
    public var sourceEventId: String
    public var kind: Kind
    public var store: VerifiedTransaction.Store
    public var environment: StoreEnvironment
    public var transactionId: String
    /// When the source signed the event. The latest refund or reversal decides whether a purchase
    /// is refunded, whatever order events arrive in.
    public var signedDate: Date
    public var revocationReason: Int32?
    /// SHA-256 of the verified evidence (32 bytes).
    public var evidenceSHA256: [UInt8]

    public init(
        sourceEventId: String, kind: Kind, store: VerifiedTransaction.Store, environment: StoreEnvironment,
        transactionId: String, signedDate: Date, revocationReason: Int32? = nil, evidenceSHA256: [UInt8]
    ) {
        self.sourceEventId = sourceEventId
        self.kind = kind
        self.store = store
        self.environment = environment
        self.transactionId = transactionId
        self.signedDate = signedDate
        self.revocationReason = revocationReason
        self.evidenceSHA256 = evidenceSHA256
    }

    /// The refund event a verified App Store notification carries: `REFUND`, `REFUND_REVERSED` and
    /// `REVOKE` with a transaction; nil for every other notification (nothing for the ledger to do).
    public init?(notification: VerifiedNotification) {
        guard let kind = Kind(notificationType: notification.notificationType),
            let transaction = notification.transaction
        else { return nil }
        self.init(
            sourceEventId: notification.notificationUUID, kind: kind, store: transaction.store,
            environment: transaction.environment, transactionId: transaction.transactionId,
            signedDate: notification.signedDate, revocationReason: transaction.revocationReason,
            evidenceSHA256: notification.evidenceSHA256)
    }
}

/// The result of `LedgerStore.recordRefundEvent(_:)`.
public enum RefundEventOutcome: Sendable, Hashable {
    /// Recorded and applied to the recorded purchase, which is now in this state (unchanged when the
    /// event changes nothing, e.g. a second refund, or a family revoke of a bought purchase).
    case applied(PurchaseState)
    /// Recorded; the purchase is not recorded yet. It is applied when the purchase arrives.
    case parked
    /// Received before (same id, same transaction and kind): nothing written. The purchase's state,
    /// nil while it is not recorded.
    case duplicate(PurchaseState?)
    /// Refused, nothing written: the event id was recorded before for another transaction or kind.
    case conflict
}
