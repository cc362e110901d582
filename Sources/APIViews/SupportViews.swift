import Foundation
import Ledger

/// A support action (a compensation grant or its revocation) as `/api/v1/admin/grants` answers it and
/// `shopledger admin history --json` prints it. `revokes` is set on a revoke, `revokedBy` on a grant
/// taken back, `transactionId` when the action names a purchase; each null otherwise.
public struct SupportActionView: Encodable, Sendable, Equatable {
    public let actionId: Int64
    public let kind: String
    public let uid: String
    public let item: PurchaseView.Item
    @NullWhenNil public var revokes: Int64?
    @NullWhenNil public var revokedBy: Int64?
    public let actor: String
    public let reason: String
    @NullWhenNil public var transactionId: String?
    public let actedAt: String

    public init(_ action: SupportAction) {
        actionId = action.actionId
        kind = action.kind.rawValue
        uid = action.uid
        item = PurchaseView.Item(action.item)
        revokes = action.revokes
        revokedBy = action.revokedBy
        actor = action.actor
        reason = action.reason
        transactionId = action.transactionId
        actedAt = ViewJSON.timestamp(action.actedAt)
    }
}

/// A purchase and its whole history: journal entries, the store's events, ownership changes, and the
/// support actions that name it.
public struct PurchaseRecordView: Encodable, Sendable, Equatable {
    public struct Entry: Encodable, Sendable, Equatable {
        public let entryId: Int64
        public let seq: Int
        public let kind: String
        public let effectiveAt: String
        public let recordedAt: String
        @NullWhenNil public var refundEventId: String?
    }

    public struct StoreEvent: Encodable, Sendable, Equatable {
        public let sourceEventId: String
        public let kind: String
        public let signedAt: String
        public let receivedAt: String
        @NullWhenNil public var revocationReason: Int?
    }

    public struct GrantChange: Encodable, Sendable, Equatable {
        public let eventId: Int64
        public let delta: Int
        public let cause: String
        public let recordedAt: String
    }

    public let uid: String
    public let purchase: PurchaseView
    public let entries: [Entry]
    public let storeEvents: [StoreEvent]
    public let grantChanges: [GrantChange]
    public let supportActions: [SupportActionView]

    public init(_ record: PurchaseRecord) {
        uid = record.purchase.uid
        purchase = PurchaseView(record.purchase)
        entries = record.entries.map {
            Entry(
                entryId: $0.entryId, seq: $0.seq, kind: $0.kind.rawValue,
                effectiveAt: ViewJSON.timestamp($0.effectiveAt),
                recordedAt: ViewJSON.timestamp($0.recordedAt), refundEventId: $0.refundEventId)
        }
        storeEvents = record.storeEvents.map {
            StoreEvent(
                sourceEventId: $0.sourceEventId, kind: $0.kind, signedAt: ViewJSON.timestamp($0.signedAt),
                receivedAt: ViewJSON.timestamp($0.receivedAt), revocationReason: $0.revocationReason)
        }
        grantChanges = record.grantChanges.map {
            GrantChange(
                eventId: $0.eventId, delta: $0.delta, cause: $0.cause, recordedAt: ViewJSON.timestamp($0.recordedAt))
        }
        supportActions = record.supportActions.map(SupportActionView.init)
    }
}

/// `GET /api/v1/admin/purchases/{transactionId}` and `shopledger admin lookup --json`: the id asked for
/// and the purchases it names (the API answers 404 when none does; the command prints an empty list
/// and exits with status 1).
public struct PurchaseLookupView: Encodable, Sendable, Equatable {
    public let id: String
    public let records: [PurchaseRecordView]

    public init(id: String, records: [PurchaseRecord]) {
        self.id = id
        self.records = records.map(PurchaseRecordView.init)
    }
}

/// `GET /api/v1/admin/users/{uid}/history` and `shopledger admin history --json`: a user's purchases
/// with their histories, and every support action about the user.
public struct UserHistoryView: Encodable, Sendable, Equatable {
    public let uid: String
    public let records: [PurchaseRecordView]
    public let supportActions: [SupportActionView]

    public init(uid: String, records: [PurchaseRecord], supportActions: [SupportAction]) {
        self.uid = uid
        self.records = records.map(PurchaseRecordView.init)
        self.supportActions = supportActions.map(SupportActionView.init)
    }
}
