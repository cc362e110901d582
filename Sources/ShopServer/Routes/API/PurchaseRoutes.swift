import Hummingbird
import Ledger

/// `POST /api/v1/purchases`: `{"signedTransaction": "<JWS>"}` or `{"receipt": "...", "productId": "..."}`.
/// 200 `{"purchase", "duplicate"}`; 409 `transaction_owned_by_another_user` / `transaction_evidence_differs`;
/// 422 with the prover's reason (or `unknown_product`); 404 `user_not_registered`.
struct PurchaseRoutes {
    let authenticator: Authenticator
    let desk: PurchaseDesk
    let body: RequestBody

    func register(on group: RouterGroup<some RequestContext>) {
        group.post("purchases") { request, _ in try await purchase(request) }
    }

    func purchase(_ request: Request) async throws -> APIBodies.PurchaseResult {
        let uid = try authenticator.uid(fromBearerHeaders: request.headers)
        let input = try await body.json(APIBodies.PurchaseRequest.self, of: request)
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
            let message =
                switch reason {
                case .ownedByAnotherUser: "this transaction is recorded for another user"
                case .differentEvidence: "this transaction was recorded before with evidence that says otherwise"
                }
            throw APIError(.conflict, code: reason.rawValue, message: message)
        }
    }
}
