import Foundation

/// A purchase with its whole history, for support: every journal entry (the purchase, refunds,
/// reversals, revokes), every refund event the store sent (applied or not), every change of
/// ownership it caused, and the support actions that name it.
public struct PurchaseRecord: Sendable, Hashable {
    public struct Entry: Sendable, Hashable {
        public var entryId: Int64
        public var seq: Int
        public var kind: JournalEntryKind
        public var effectiveAt: Date
        public var recordedAt: Date
        public var refundEventId: String?
    }

    public struct StoreEvent: Sendable, Hashable {
        public var sourceEventId: String
        public var kind: String
        public var signedAt: Date
        public var receivedAt: Date
        public var revocationReason: Int?
    }

    public struct GrantChange: Sendable, Hashable {
        public var eventId: Int64
        public var delta: Int
        public var cause: String
        public var recordedAt: Date
    }

    public var purchase: Purchase
    public var entries: [Entry]
    public var storeEvents: [StoreEvent]
    public var grantChanges: [GrantChange]
    public var supportActions: [SupportAction]
}
