import Foundation
import Hummingbird
import Ledger

/// The JSON of the support endpoints (`SupportRoutes`).
package enum SupportBodies {
    /// `POST /api/v1/admin/grants`.
    package struct GrantRequest: Decodable, Sendable {
        let uid: String
        let kind: String
        let index: Int
        let reason: String
        let transactionId: String?
    }

    /// `POST /api/v1/admin/grants/{actionId}/revoke`.
    package struct RevokeRequest: Decodable, Sendable {
        let reason: String
    }

    struct Action: ResponseEncodable, Sendable {
        let actionId: Int64
        let kind: String
        let uid: String
        let item: APIBodies.PurchaseBody.Item
        let revokes: Int64?
        let revokedBy: Int64?
        let actor: String
        let reason: String
        let transactionId: String?
        let actedAt: String

        init(_ action: SupportAction) {
            actionId = action.actionId
            kind = action.kind.rawValue
            uid = action.uid
            item = .init(kind: action.item.kind.rawValue, index: action.item.index)
            revokes = action.revokes
            revokedBy = action.revokedBy
            actor = action.actor
            reason = action.reason
            transactionId = action.transactionId
            actedAt = UserDocument.timestamp(action.actedAt)
        }

        // Optional fields are written as null rather than left out, as elsewhere in the API.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(actionId, forKey: .actionId)
            try container.encode(kind, forKey: .kind)
            try container.encode(uid, forKey: .uid)
            try container.encode(item, forKey: .item)
            try container.encode(revokes, forKey: .revokes)
            try container.encode(revokedBy, forKey: .revokedBy)
            try container.encode(actor, forKey: .actor)
            try container.encode(reason, forKey: .reason)
            try container.encode(transactionId, forKey: .transactionId)
            try container.encode(actedAt, forKey: .actedAt)
        }

        enum CodingKeys: String, CodingKey {
            case actionId, kind, uid, item, revokes, revokedBy, actor, reason, transactionId, actedAt
        }
    }

    /// A purchase and its whole history.
    struct Record: Encodable, Sendable {
        struct Entry: Encodable, Sendable {
            let entryId: Int64
            let seq: Int
            let kind: String
            let effectiveAt: String
            let recordedAt: String
            let refundEventId: String?
        }
        struct StoreEvent: Encodable, Sendable {
            let sourceEventId: String
            let kind: String
            let signedAt: String
            let receivedAt: String
            let revocationReason: Int?
        }
        struct GrantChange: Encodable, Sendable {
            let eventId: Int64
            let delta: Int
            let cause: String
            let recordedAt: String
        }

        let uid: String
        let purchase: APIBodies.PurchaseBody
        let entries: [Entry]
        let storeEvents: [StoreEvent]
        let grantChanges: [GrantChange]
        let supportActions: [Action]

        init(_ record: PurchaseRecord) {
            uid = record.purchase.uid
            purchase = APIBodies.PurchaseBody(record.purchase)
            entries = record.entries.map {
                Entry(
                    entryId: $0.entryId, seq: $0.seq, kind: $0.kind.rawValue,
                    effectiveAt: UserDocument.timestamp($0.effectiveAt),
                    recordedAt: UserDocument.timestamp($0.recordedAt), refundEventId: $0.refundEventId)
            }
            storeEvents = record.storeEvents.map {
                StoreEvent(
                    sourceEventId: $0.sourceEventId, kind: $0.kind, signedAt: UserDocument.timestamp($0.signedAt),
                    receivedAt: UserDocument.timestamp($0.receivedAt), revocationReason: $0.revocationReason)
            }
            grantChanges = record.grantChanges.map {
                GrantChange(
                    eventId: $0.eventId, delta: $0.delta, cause: $0.cause,
                    recordedAt: UserDocument.timestamp($0.recordedAt))
            }
            supportActions = record.supportActions.map(Action.init)
        }
    }

    /// `GET /api/v1/admin/purchases/{transactionId}`.
    struct Lookup: ResponseEncodable, Sendable {
        let id: String
        let records: [Record]
    }

    /// `GET /api/v1/admin/users/{uid}/history`.
    struct History: ResponseEncodable, Sendable {
        let uid: String
        let records: [Record]
        let supportActions: [Action]
    }
}
