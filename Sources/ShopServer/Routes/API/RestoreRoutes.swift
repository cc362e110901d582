import AppStoreServerAPI
import Hummingbird
import Ledger
import Logging
import Receipts
import Shop

/// `POST /api/v1/purchases/restore`: the caller's purchases from Apple's transaction history, given one
/// proof of whose history it is:
///
/// - `{"signedTransaction": "<JWS>"}`: any StoreKit 2 transaction of the app from the device, verified
///   like a purchase; the history is its customer's (asked in its environment);
/// - `{"receipt": "<base64>"}`: a classic app receipt from the device, verified offline; the history is
///   that of its entries' customer;
/// - `{"transactionId": "…"}`: a bare id, which anyone may have read off an e-mailed receipt. Taken only
///   from a caller who already owns a verified purchase in that history, in the history's environment;
///   otherwise 403 `proof_required` and nothing written (a caller with no App Store purchase at all is
///   refused without asking Apple). An appAccountToken is no proof (``RestoreStanding``). A refusal
///   spends the refused-proof allowance.
///
/// Every entry of the history is verified like a client-sent transaction and recorded for the caller
/// with the usual idempotency, never setting the caller's appAccountToken. A purchase stays with whoever
/// recorded it first: the transaction named (or proven) recorded for another user is 409 and nothing is
/// written; other entries recorded for another user come back as `conflict` outcomes, entries the ledger
/// refuses (unknown product, another account token) as `refused`.
///
/// Apple is asked within the restore budget, cut to the request's time left less the ledger's reserve:
/// when it does not answer by then, 503 `app_store_unavailable`. 501 when the App Store Server API is not
/// configured. The rule is ``RestoreDesk``'s (Shop); this route only translates the body and the result.
struct RestoreRoutes {
    /// nil when the App Store Server API is not configured (501).
    let restores: RestoreDesk?
    let body: RequestBody

    func register(on group: RouterGroup<ShopRequestContext>) {
        group.post("purchases/restore") { request, context in
            try await restore(request, uid: context.requireUID(), logger: context.logger)
        }
    }

    func restore(_ request: Request, uid: String, logger: Logger) async throws -> APIBodies.RestoreResult {
        guard let restores else { throw AppStoreAPINotConfigured() }
        let proof = try await body.json(APIBodies.RestoreRequest.self, of: request).proof()
        return APIBodies.RestoreResult(try await restores.restore(proof, for: uid, logger: logger))
    }
}

/// The App Store Server API is not configured: its features answer 501.
struct AppStoreAPINotConfigured: Error, Sendable, CustomStringConvertible {
    var description: String {
        "the App Store Server API is not configured (--app-store-key-file, --app-store-key-id, --app-store-issuer-id)"
    }
}
