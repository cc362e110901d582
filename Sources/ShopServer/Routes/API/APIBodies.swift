import APIViews
import Foundation
import Hummingbird
import Ledger
import Receipts
import Shop

/// Wire types of the JSON surface: the ledger's domain types mapped to what `docs/openapi.yaml` describes.
package enum APIBodies {
    /// `GET /api/v1/me`: `{"uid", "equipped": {face, background}, "owned": {"faces", "backgrounds"}}`.
    struct Me: ResponseEncodable, Sendable {
        struct Owned: Encodable, Sendable {
            let faces: [Int]
            let backgrounds: [Int]
        }
        let uid: String
        let equipped: EquippedItems
        let owned: Owned

        init(_ inventory: Inventory) {
            uid = inventory.uid
            equipped = inventory.equipped
            owned = Owned(faces: inventory.faces, backgrounds: inventory.backgrounds)
        }
    }

    /// A recorded purchase: the view the admin lookups and `--json` share.
    typealias PurchaseBody = PurchaseView

    /// `POST /api/v1/purchases` 200: `{"purchase": {...}, "duplicate": bool}`. Written by hand (`JSONBody`):
    /// `JSONEncoder` was about 5% of the server's CPU per purchase under load; `Encodable` stays for
    /// the tests that compare the two.
    struct PurchaseResult: Encodable, ResponseGenerator, Sendable {
        let purchase: PurchaseBody
        let duplicate: Bool

        func response(from request: Request, context: some RequestContext) throws -> Response {
            var body = JSONBody(capacity: 512)
            body.object("purchase") { purchase.write(into: &$0) }
            body.field("duplicate", duplicate)
            return body.response()
        }
    }

    /// `POST /api/v1/purchases` 200 for a classic receipt without `productId`: `{"entries": [...]}`.
    struct ReceiptResult: ResponseEncodable, Sendable {
        let entries: [ReceiptEntry]
    }

    /// One in-app entry of a classic receipt: `recorded` or `duplicate` with its purchase, or `refused` with
    /// an error (`unsupported_product_type`, `unknown_product`, `transaction_owned_by_another_user`,
    /// `transaction_evidence_differs`). Every key is always present.
    struct ReceiptEntry: Encodable, Sendable {
        struct Failure: Encodable, Sendable {
            let code: String
            let message: String
        }
        let transactionId: String
        let productId: String
        let outcome: String
        @NullWhenNil var purchase: PurchaseBody?
        @NullWhenNil var error: Failure?

        init(_ entry: PurchaseDesk.EntryOutcome) {
            transactionId = entry.transactionId
            productId = entry.productId
            switch entry.result {
            case .success(.recorded(let purchase)):
                (outcome, self.purchase, error) = ("recorded", PurchaseBody(purchase), nil)
            case .success(.duplicate(let purchase)):
                (outcome, self.purchase, error) = ("duplicate", PurchaseBody(purchase), nil)
            case .success(.conflict(let reason)):
                (outcome, purchase, error) = (
                    "refused", nil, Failure(code: reason.rawValue, message: reason.explanation)
                )
            case .failure(let refusal):
                (outcome, purchase, error) = ("refused", nil, Failure(code: refusal.code, message: refusal.message))
            }
        }
    }

    /// `POST /api/v1/purchases` body: `{"signedTransaction"}` or `{"receipt", "productId"}` (the App Store,
    /// `store` absent or `app_store`), or `{"store": "google_play", "packageName", "productId", "purchaseToken"}`.
    package struct PurchaseRequest: Decodable, Sendable {
        package let signedTransaction: String?
        package let receipt: String?
        package let productId: String?
        package var store: String? = nil
        package var packageName: String? = nil
        package var purchaseToken: String? = nil
    }

    /// `POST /api/v1/purchases` 202 for a Google Play purchase whose payment is pending: nothing granted.
    struct PendingPurchase: ResponseEncodable, Sendable {
        let pending: Bool
        let message: String
    }

    /// `POST /api/v1/notifications/google-play` 200.
    struct GooglePlayNotificationResult: ResponseEncodable, Sendable {
        let messageId: String
        let notificationType: String
        /// `stored` or `duplicate`.
        let storage: String
        /// `applied`, `parked`, `conflict`, `pending` (stored, applied later), `recorded` (a pending purchase
        /// Google completed, recorded for its claimant) or `none`.
        let ledger: String
    }

    /// `PUT /api/v1/me/equipped` body and answer.
    package struct Equipped: Codable, ResponseEncodable, Sendable {
        let face: Int
        let background: Int
    }

    /// `POST /api/v1/notifications/app-store` body.
    package struct NotificationRequest: Decodable, Sendable {
        let signedPayload: String
    }

    /// `POST /api/v1/notifications/app-store` 200.
    struct NotificationResult: ResponseEncodable, Sendable {
        let notificationUUID: String
        let notificationType: String
        /// `stored` or `duplicate`.
        let storage: String
        /// What the ledger did: `applied`, `parked` (purchase not recorded yet), `pending` (the sweeper will
        /// retry), or `none` (nothing to do).
        let ledger: String
    }

    /// `GET /api/v1/admin/users/{uid}`.
    struct AdminUser: ResponseEncodable, Sendable {
        let uid: String
        let registeredAt: String
        let equipped: EquippedItems
        let owned: Me.Owned
        let purchases: [PurchaseBody]
    }

    /// `POST /api/v1/purchases/restore` body: one proof of whose history to restore.
    package struct RestoreRequest: Decodable, Sendable {
        /// Any StoreKit 2 signed transaction of the app, from the device.
        let signedTransaction: String?
        /// A classic app receipt (base64), from the device.
        let receipt: String?
        /// A bare transaction id: taken only from a caller who owns part of its history already, in its
        /// environment.
        let transactionId: String?

        /// The one proof given; 400 when none or more than one is.
        func proof() throws(InputError) -> RestoreDesk.Proof {
            let given: [(text: String, proof: RestoreDesk.Proof)] = [
                signedTransaction.map { ($0, .signedTransaction($0)) }, receipt.map { ($0, .receipt($0)) },
                transactionId.map { ($0, .transactionId($0)) },
            ].compactMap { $0 }
            let fields = "signedTransaction (StoreKit 2), receipt (a classic app receipt) or transactionId"
            guard given.count <= 1 else { throw InputError("too_many_proofs", "give only one of \(fields)") }
            guard let proof = given.first, !proof.text.isEmpty else {
                throw InputError("missing_field", "one of \(fields) is required")
            }
            return proof.proof
        }
    }

    /// What restoring did with one transaction of the history.
    struct RestoreOutcome: Encodable, Sendable {
        let transactionId: String
        let productId: String
        /// `recorded`, `duplicate`, `conflict` (recorded for another user, or with other evidence) or
        /// `refused` (the product is not in the catalog, or the appAccountToken is not the caller's).
        let outcome: String
        @NullWhenNil var code: String?
        @NullWhenNil var purchase: PurchaseBody?

        init(_ outcome: RestoreDesk.Outcome) {
            transactionId = outcome.transaction.transactionId
            productId = outcome.transaction.productId
            self.outcome = outcome.kind.rawValue
            self.code = outcome.code
            self.purchase = outcome.purchase.map(PurchaseBody.init)
        }
    }

    /// `POST /api/v1/purchases/restore` 200.
    struct RestoreResult: ResponseEncodable, Sendable {
        /// The environment whose history answered (`Production` or `Sandbox`).
        let environment: String
        let results: [RestoreOutcome]
        /// Authentic transactions of product types the shop does not sell, not recorded.
        let skipped: Int

        init(_ restored: RestoreDesk.Restored) {
            environment = restored.environment.rawValue
            results = restored.outcomes.map(RestoreOutcome.init)
            skipped = restored.skipped
        }
    }
}
