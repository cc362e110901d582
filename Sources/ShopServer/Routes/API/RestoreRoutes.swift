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
/// Apple is asked within ``budget``, cut to the request's time left less ``ledgerReserve``: when it does
/// not answer by then, 503 `app_store_unavailable`. 501 when the App Store Server API is not configured.
struct RestoreRoutes {
    let api: AppStoreServerAPIClient?
    let desk: PurchaseDesk
    let body: RequestBody
    /// Restores per user: each asks Apple.
    let limit: UserRateLimiter
    /// The longest a restore waits for Apple (``ServerConfiguration/appStoreRestoreBudget``).
    var budget: Duration = .seconds(6)
    /// The request's time kept for recording the history (``ServerConfiguration/appStoreLedgerReserve``).
    var ledgerReserve: Duration = .seconds(1)

    func register(on group: RouterGroup<ShopRequestContext>) {
        group.post("purchases/restore") { request, context in
            try await restore(request, uid: context.requireUID(), logger: context.logger)
        }
    }

    /// Whose history a restore asks for: a transaction of it, and how the caller vouched for it.
    private struct Anchor {
        var transactionId: String
        /// Known when proven (the proof says); a bare id is looked up in production, then the sandbox.
        var environment: StoreEnvironment?
        var proven: Bool
    }

    func restore(_ request: Request, uid: String, logger: Logger) async throws -> APIBodies.RestoreResult {
        guard let api else { throw AppStoreAPINotConfigured() }
        let proof = try await body.json(APIBodies.RestoreRequest.self, of: request).proof()
        let anchor: Anchor
        let history: VerifiedTransactions
        switch proof {
        case .signedTransaction(let jws):
            let transaction = try await desk.proven(.signedTransaction(jws), for: uid)
            anchor = Anchor(
                transactionId: transaction.transactionId, environment: transaction.environment, proven: true)
            history = try await self.history(of: anchor, from: api, for: uid)
        case .receipt(let receipt):
            anchor = try await receiptAnchor(receipt, for: uid)
            history = try await self.history(of: anchor, from: api, for: uid)
        case .transactionId(let id):
            // A claim, not a proof: admitted against the refused-proof allowance like one, and spent
            // from it when the history turns out not to be the caller's.
            anchor = Anchor(transactionId: id, environment: nil, proven: false)
            history = try await desk.claimingOwnership(by: uid) {
                let standing = try await desk.ledger.restoreStanding(
                    of: uid, environment: .production, transactionIds: [])
                guard standing.couldOwnAHistory else { throw OwnershipNotProven() }
                let history = try await self.history(of: anchor, from: api, for: uid)
                try await requireOwnership(of: history, by: uid)
                return history
            }
        }

        // The transaction named first: if it is another user's, nothing of the history is recorded.
        let named = anchor.transactionId
        let ordered = history.transactions.sorted {
            ($0.transactionId == named ? 0 : 1) < ($1.transactionId == named ? 0 : 1)
        }
        var results: [APIBodies.RestoreOutcome] = []
        for transaction in ordered {
            let outcome: APIBodies.RestoreOutcome
            do {
                switch try await desk.record(transaction, for: uid, claimingAccountToken: false) {
                case .recorded(let purchase): outcome = .init(transaction, "recorded", purchase: purchase)
                case .duplicate(let purchase): outcome = .init(transaction, "duplicate", purchase: purchase)
                case .conflict(let reason):
                    if transaction.transactionId == named, reason == .ownedByAnotherUser {
                        throw APIError(
                            .conflict, code: reason.rawValue, message: "this transaction is recorded for another user")
                    }
                    outcome = .init(transaction, "conflict", code: reason.rawValue)
                }
            } catch let error as LedgerError
                where [.unknownProduct, .productRetired, .accountTokenMismatch].contains(error.code)
            {
                // The named transaction bound to another account token: the history is not the caller's.
                if transaction.transactionId == named, error.code == .accountTokenMismatch { throw error }
                outcome = .init(transaction, "refused", code: error.code.rawValue)
            }
            results.append(outcome)
        }
        logger.info(
            "restored purchases from the App Store",
            metadata: [
                "uid": "\(uid)", "transactions": "\(results.count)", "environment": "\(history.environment)",
                "proof": "\(anchor.proven ? "device" : "ownership")",
            ])
        return .init(environment: history.environment.rawValue, results: results, skipped: history.skipped.count)
    }

    /// The customer's history `anchor` names, asked within the caller's restore allowance and the
    /// request's budget.
    private func history(
        of anchor: Anchor, from api: AppStoreServerAPIClient, for uid: String
    ) async throws -> VerifiedTransactions {
        if let wait = limit.take(uid) {
            desk.counters.recordRateLimited("restore")
            throw RateLimitedError(limit: "restore", retryAfter: wait)
        }
        guard let deadline = RequestBudget.deadline(budget: budget, reserve: ledgerReserve) else {
            throw AppStoreServerAPIError(.timeout, "no time left in this request to ask Apple")
        }
        return try await api.within(deadline).transactionHistory(anchor.transactionId, in: anchor.environment)
    }

    /// The transaction whose history a classic receipt from the device names: its first entry, the
    /// receipt verified here (no call to Apple).
    private func receiptAnchor(_ receipt: String, for uid: String) async throws -> Anchor {
        let entries = try await desk.provenEntries(receipt: receipt, for: uid).map(\.transaction)
        guard let entry = entries.first else {
            throw InputError(
                "nothing_to_restore", "the receipt lists no in-app purchase", status: .unprocessableContent)
        }
        guard entry.store == .appStore else {
            throw InputError(
                "not_an_app_store_receipt", "only an App Store receipt names a history Apple keeps",
                status: .unprocessableContent)
        }
        return Anchor(transactionId: entry.transactionId, environment: entry.environment, proven: true)
    }

    /// A bare id's history is the caller's when they own one of its purchases already, in its
    /// environment; otherwise 403, nothing written.
    private func requireOwnership(of history: VerifiedTransactions, by uid: String) async throws {
        let standing = try await desk.ledger.restoreStanding(
            of: uid, environment: history.environment, transactionIds: history.transactions.map(\.transactionId))
        guard standing.ownsOneOfThem else { throw OwnershipNotProven() }
    }
}

/// The App Store Server API is not configured: its features answer 501.
struct AppStoreAPINotConfigured: Error, Sendable, CustomStringConvertible {
    var description: String {
        "the App Store Server API is not configured (--app-store-key-file, --app-store-key-id, --app-store-issuer-id)"
    }
}
