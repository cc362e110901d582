import Hummingbird
import Ledger
import Receipts

/// `POST /api/v1/purchases`: `{"signedTransaction": "<JWS>"}` or `{"receipt": "...", "productId": "..."}`.
/// 200 `{"purchase", "duplicate"}`; 409 `transaction_owned_by_another_user` / `transaction_evidence_differs`;
/// 422 with the prover's reason (or `unknown_product`); 404 `user_not_registered`.
///
/// A classic app receipt without `productId` records every purchase it holds: 200 `{"entries": [...]}`,
/// each entry `recorded`, `duplicate` or `refused` with its own code (422 only when the receipt itself is
/// refused).
struct PurchaseRoutes {
    let desk: PurchaseDesk
    let body: RequestBody

    func register(on group: RouterGroup<ShopRequestContext>) {
        group.post("purchases") { request, context in try await purchase(request, context: context) }
    }

    func purchase(_ request: Request, context: ShopRequestContext) async throws -> Response {
        let uid = try context.requireUID()
        let bytes = try await body.jsonBytes(of: request)
        let input =
            try APIBodies.PurchaseRequest(signedTransactionOnly: bytes)
            ?? RequestBody.decode(APIBodies.PurchaseRequest.self, from: bytes)
        if input.signedTransaction == nil, input.productId == nil, let receipt = input.receipt,
            ReceiptField(classifying: receipt) == .appReceipt
        {
            let entries = try await desk.purchaseEach(receipt: receipt, for: uid)
            return try APIBodies.ReceiptResult(entries: entries.map(APIBodies.ReceiptEntry.init))
                .response(from: request, context: context)
        }
        return try await single(input, uid: uid)
            .response(from: request, context: context)
    }

    private func single(_ input: APIBodies.PurchaseRequest, uid: String) async throws -> APIBodies.PurchaseResult {
        let proof: PurchaseDesk.Proof
        switch (input.signedTransaction, input.receipt) {
        case (let jws?, nil) where !jws.isEmpty:
            guard input.productId == nil else {
                throw InputError("invalid_request", "productId goes with receipt, not with signedTransaction")
            }
            proof = .signedTransaction(jws)
        case (nil, let receipt?) where !receipt.isEmpty:
            proof = .receipt(receipt, productId: input.productId)
        default:
            throw InputError("invalid_request", "send a non-empty signedTransaction, or a receipt (with its productId)")
        }
        switch try await desk.purchase(proof, for: uid) {
        case .recorded(let purchase): return .init(purchase: .init(purchase), duplicate: false)
        case .duplicate(let purchase): return .init(purchase: .init(purchase), duplicate: true)
        case .conflict(let reason):
            throw APIError(.conflict, code: reason.rawValue, message: reason.explanation)
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
