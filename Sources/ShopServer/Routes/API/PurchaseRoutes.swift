import APIViews
import Hummingbird
import Ledger
import Receipts
import Shop

/// `POST /api/v1/purchases`: `{"signedTransaction": "<JWS>"}` or `{"receipt": "...", "productId": "..."}`.
/// 200 `{"purchase", "duplicate"}`; 409 `transaction_owned_by_another_user` / `transaction_evidence_differs`;
/// 422 with the prover's reason (or `unknown_product`); 404 `user_not_registered`.
///
/// A classic app receipt without `productId` records every purchase it holds: 200 `{"entries": [...]}`,
/// each entry `recorded`, `duplicate` or `refused` with its own code (422 only when the receipt itself is
/// refused).
///
/// `{"store": "google_play", "packageName", "productId", "purchaseToken"}` is verified with Google Play
/// (``GooglePlayDesk``): 200 as above once recorded; 202 `{"pending": true}` while Google says the payment
/// is pending (nothing granted); 422 `wrong_package` / `purchase_not_found` / `purchase_cancelled`;
/// 503 `google_play_unavailable` when Google does not answer within the request's budget (nothing
/// recorded: the app posts it again); 501 `google_play_not_configured`.
struct PurchaseRoutes {
    let desk: PurchaseDesk
    let body: RequestBody
    var googlePlay: GooglePlayDesk? = nil

    func register(on group: RouterGroup<ShopRequestContext>) {
        group.post("purchases") { request, context in try await purchase(request, context: context) }
    }

    func purchase(_ request: Request, context: ShopRequestContext) async throws -> Response {
        let uid = try context.requireUID()
        let bytes = try await body.jsonBytes(of: request)
        let input =
            try APIBodies.PurchaseRequest(signedTransactionOnly: bytes)
            ?? RequestBody.decode(APIBodies.PurchaseRequest.self, from: bytes)
        switch input.store {
        case nil, "app_store"?:
            guard input.packageName == nil, input.purchaseToken == nil else {
                throw InputError("invalid_request", "packageName and purchaseToken go with store google_play")
            }
        case "google_play"?:
            return try await googlePlayPurchase(input, uid: uid, request: request, context: context)
        default:
            throw InputError("invalid_request", "store is app_store or google_play")
        }
        switch try await desk.record(proof(in: input), for: uid) {
        case .entries(let entries):
            return try APIBodies.ReceiptResult(entries: entries.map(APIBodies.ReceiptEntry.init))
                .response(from: request, context: context)
        case .purchase(.recorded(let purchase)):
            return try APIBodies.PurchaseResult(purchase: .init(purchase), duplicate: false)
                .response(from: request, context: context)
        case .purchase(.duplicate(let purchase)):
            return try APIBodies.PurchaseResult(purchase: .init(purchase), duplicate: true)
                .response(from: request, context: context)
        case .purchase(.conflict(let reason)):
            throw APIError(.conflict, code: reason.rawValue, message: reason.explanation)
        }
    }

    private func googlePlayPurchase(
        _ input: APIBodies.PurchaseRequest, uid: String, request: Request, context: ShopRequestContext
    ) async throws -> Response {
        guard input.signedTransaction == nil, input.receipt == nil else {
            throw InputError("invalid_request", "a Google Play purchase is packageName, productId and purchaseToken")
        }
        guard let packageName = input.packageName, !packageName.isEmpty, let productId = input.productId,
            !productId.isEmpty, let token = input.purchaseToken, !token.isEmpty
        else {
            throw InputError("invalid_request", "send packageName, productId and purchaseToken, each non-empty")
        }
        guard let googlePlay else { throw GooglePlayNotConfigured() }
        switch try await googlePlay.purchase(packageName: packageName, productId: productId, token: token, for: uid) {
        case .pending:
            var response = try APIBodies.PendingPurchase(
                pending: true,
                message: "Google Play says the payment is pending; nothing is granted until it completes"
            ).response(from: request, context: context)
            response.status = .accepted
            return response
        case .recorded(.recorded(let purchase), _):
            return try APIBodies.PurchaseResult(purchase: .init(purchase), duplicate: false)
                .response(from: request, context: context)
        case .recorded(.duplicate(let purchase), _):
            return try APIBodies.PurchaseResult(purchase: .init(purchase), duplicate: true)
                .response(from: request, context: context)
        case .recorded(.conflict(let reason), _):
            throw APIError(.conflict, code: reason.rawValue, message: reason.explanation)
        }
    }

    /// The proof the body holds: a non-empty signed transaction, or a non-empty receipt with its product
    /// if the client names it.
    private func proof(in input: APIBodies.PurchaseRequest) throws -> PurchaseDesk.Proof {
        switch (input.signedTransaction, input.receipt) {
        case (let jws?, nil) where !jws.isEmpty:
            guard input.productId == nil else {
                throw InputError("invalid_request", "productId goes with receipt, not with signedTransaction")
            }
            return .signedTransaction(jws)
        case (nil, let receipt?) where !receipt.isEmpty:
            return .receipt(receipt, productId: input.productId)
        default:
            throw InputError("invalid_request", "send a non-empty signedTransaction, or a receipt (with its productId)")
        }
    }
}

extension PurchaseConflict {
    /// For the JSON surface's error messages.
    var explanation: String {
        switch self {
        case .ownedByAnotherUser: "this transaction is recorded for another user"
        case .differentEvidence: "this transaction was recorded before with evidence that says otherwise"
        }
    }
}
