import AppStoreServerAPI
import Hummingbird
import Ledger
import Logging
import Receipts

/// `POST /api/v1/purchases/restore`: `{"transactionId": "<any App Store transaction id of the user>"}`.
///
/// Fetches the customer's transaction history from Apple (production, then the sandbox; every entry
/// verified like a client-sent transaction) and records each purchase for the caller with the usual
/// idempotency. The transaction named must not be recorded for another user (409, nothing written) nor
/// carry an `appAccountToken` other than the caller's purchases carry (422, nothing written); other
/// entries recorded for another user come back as `conflict` outcomes, and entries refused by the ledger
/// (unknown product, another account token) as `refused`. 501 when the App Store Server API is not
/// configured.
struct RestoreRoutes {
    let authenticator: Authenticator
    let api: AppStoreServerAPIClient?
    let desk: PurchaseDesk
    let body: RequestBody
    /// Restores per user: each asks Apple.
    let limit: UserRateLimiter

    func register(on group: RouterGroup<some RequestContext>) {
        group.post("purchases/restore") { request, context in try await restore(request, logger: context.logger) }
    }

    func restore(_ request: Request, logger: Logger) async throws -> APIBodies.RestoreResult {
        let uid = try authenticator.uid(fromBearerHeaders: request.headers)
        guard let api else { throw AppStoreAPINotConfigured() }
        let input = try await body.json(APIBodies.RestoreRequest.self, of: request)
        guard let transactionId = input.transactionId, !transactionId.isEmpty else {
            throw InputError.missingField("transactionId")
        }
        if let wait = limit.take(uid) {
            desk.metrics.recordRateLimited("restore")
            throw RateLimitedError(limit: "restore", retryAfter: wait)
        }
        let history = try await api.transactionHistory(transactionId)

        // The transaction named first: if it is another user's, nothing of the history is recorded.
        let ordered = history.transactions.sorted {
            ($0.transactionId == transactionId ? 0 : 1) < ($1.transactionId == transactionId ? 0 : 1)
        }
        var results: [APIBodies.RestoreOutcome] = []
        for transaction in ordered {
            let outcome: APIBodies.RestoreOutcome
            do {
                switch try await desk.record(transaction, for: uid) {
                case .recorded(let purchase): outcome = .init(transaction, "recorded", purchase: purchase)
                case .duplicate(let purchase): outcome = .init(transaction, "duplicate", purchase: purchase)
                case .conflict(let reason):
                    if transaction.transactionId == transactionId, reason == .ownedByAnotherUser {
                        throw APIError(
                            .conflict, code: reason.rawValue, message: "this transaction is recorded for another user")
                    }
                    outcome = .init(transaction, "conflict", code: reason.rawValue)
                }
            } catch let error as LedgerError where error.code == .unknownProduct || error.code == .accountTokenMismatch
            {
                // The named transaction bound to another account token: the history is not the caller's.
                if transaction.transactionId == transactionId, error.code == .accountTokenMismatch { throw error }
                outcome = .init(transaction, "refused", code: error.code.rawValue)
            }
            results.append(outcome)
        }
        logger.info(
            "restored purchases from the App Store",
            metadata: ["uid": "\(uid)", "transactions": "\(results.count)", "environment": "\(history.environment)"])
        return .init(environment: history.environment.rawValue, results: results, skipped: history.skipped.count)
    }
}

/// The App Store Server API is not configured: its features answer 501.
struct AppStoreAPINotConfigured: Error, Sendable, CustomStringConvertible {
    var description: String {
        "the App Store Server API is not configured (--app-store-key-file, --app-store-key-id, --app-store-issuer-id)"
    }
}
