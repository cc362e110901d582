import Foundation
import Ledger
import Receipts

/// `admin lookup --json` and `admin history --json`: a purchase with its whole history, and support
/// actions, as scripts read them. Money is integer milliunits with its currency code.
struct PurchaseRecordJSON: Encodable {
    struct Price: Encodable {
        let amountMilli: Int64
        let currency: String
        enum CodingKeys: String, CodingKey {
            case amountMilli = "amount_milli", currency
        }
    }

    struct Item: Encodable {
        let kind: String
        let index: Int

        init(_ item: ItemID) {
            kind = item.kind.rawValue
            index = item.index
        }
    }

    struct Entry: Encodable {
        let entryId: Int64
        let seq: Int
        let kind: String
        let effectiveAt: Date
        let recordedAt: Date
        @NullWhenNil var refundEventId: String?
        enum CodingKeys: String, CodingKey {
            case entryId = "entry_id", seq, kind, effectiveAt = "effective_at", recordedAt = "recorded_at"
            case refundEventId = "refund_event_id"
        }
    }

    struct StoreEvent: Encodable {
        let sourceEventId: String
        let kind: String
        let signedAt: Date
        let receivedAt: Date
        @NullWhenNil var revocationReason: Int?
        enum CodingKeys: String, CodingKey {
            case sourceEventId = "source_event_id", kind, signedAt = "signed_at", receivedAt = "received_at"
            case revocationReason = "revocation_reason"
        }
    }

    struct GrantChange: Encodable {
        let eventId: Int64
        let delta: Int
        let cause: String
        let recordedAt: Date
        enum CodingKeys: String, CodingKey {
            case eventId = "event_id", delta, cause, recordedAt = "recorded_at"
        }
    }

    let store: String
    let environment: String
    let transactionId: String
    let originalTransactionId: String
    let productId: String
    let uid: String
    let item: Item
    let book: String
    @NullWhenNil var price: Price?
    let ownershipType: String
    let state: String
    let purchaseDate: Date
    let recordedAt: Date
    let entries: [Entry]
    let storeEvents: [StoreEvent]
    let grantChanges: [GrantChange]
    let supportActions: [SupportActionJSON]

    enum CodingKeys: String, CodingKey {
        case store, environment, transactionId = "transaction_id", originalTransactionId = "original_transaction_id"
        case productId = "product_id", uid, item, book, price, ownershipType = "ownership_type", state
        case purchaseDate = "purchase_date", recordedAt = "recorded_at", entries, storeEvents = "store_events"
        case grantChanges = "grant_changes", supportActions = "support_actions"
    }

    init(_ record: PurchaseRecord) {
        let purchase = record.purchase
        store = purchase.store.rawValue
        environment = purchase.environment.rawValue
        transactionId = purchase.transactionId
        originalTransactionId = purchase.originalTransactionId
        productId = purchase.productId
        uid = purchase.uid
        item = Item(purchase.item)
        book = purchase.book
        price = purchase.price.map { Price(amountMilli: $0.amountMilli, currency: $0.currency) }
        ownershipType = purchase.ownershipType.rawValue
        state = purchase.state.rawValue
        purchaseDate = purchase.purchaseDate
        recordedAt = purchase.recordedAt
        entries = record.entries.map {
            Entry(
                entryId: $0.entryId, seq: $0.seq, kind: $0.kind.rawValue, effectiveAt: $0.effectiveAt,
                recordedAt: $0.recordedAt, refundEventId: $0.refundEventId)
        }
        storeEvents = record.storeEvents.map {
            StoreEvent(
                sourceEventId: $0.sourceEventId, kind: $0.kind, signedAt: $0.signedAt, receivedAt: $0.receivedAt,
                revocationReason: $0.revocationReason)
        }
        grantChanges = record.grantChanges.map {
            GrantChange(eventId: $0.eventId, delta: $0.delta, cause: $0.cause, recordedAt: $0.recordedAt)
        }
        supportActions = record.supportActions.map(SupportActionJSON.init)
    }
}

/// A support action (a compensation grant or its revocation).
struct SupportActionJSON: Encodable {
    let actionId: Int64
    let kind: String
    let uid: String
    let item: PurchaseRecordJSON.Item
    let actor: String
    let reason: String
    @NullWhenNil var transactionId: String?
    @NullWhenNil var revokes: Int64?
    @NullWhenNil var revokedBy: Int64?
    let actedAt: Date

    enum CodingKeys: String, CodingKey {
        case actionId = "action_id", kind, uid, item, actor, reason, transactionId = "transaction_id", revokes
        case revokedBy = "revoked_by", actedAt = "acted_at"
    }

    init(_ action: SupportAction) {
        actionId = action.actionId
        kind = action.kind.rawValue
        uid = action.uid
        item = PurchaseRecordJSON.Item(action.item)
        actor = action.actor
        reason = action.reason
        transactionId = action.transactionId
        revokes = action.revokes
        revokedBy = action.revokedBy
        actedAt = action.actedAt
    }
}

/// `admin lookup --json`: the id asked for and the purchases it names (empty, with exit status 1, when none).
struct LookupJSON: Encodable {
    let id: String
    let purchases: [PurchaseRecordJSON]
}

/// `admin history --json`: a user's purchases with their histories, and every support action.
struct HistoryJSON: Encodable {
    let uid: String
    let purchases: [PurchaseRecordJSON]
    let supportActions: [SupportActionJSON]
    enum CodingKeys: String, CodingKey {
        case uid, purchases, supportActions = "support_actions"
    }
}
