import Foundation
import GooglePlay
import Ledger
import Logging
import Receipts

/// What follows the ledger's recording of a Play purchase, wherever it is recorded (the app's post, or
/// Google's completion of a pending payment): the purchase token is kept, Google is told the purchase was
/// granted (acknowledged), and a new purchase is priced from its order (``GooglePlayPricer``), each within
/// what is left of the request less the ledger's reserve; what does not fit is the sync's.
package struct GooglePlayRecording: Sendable {
    let client: GooglePlayClient
    let ledger: LedgerStore
    let logger: Logger
    let ledgerReserve: Duration
    let acknowledgeBudget: Duration
    let priceBudget: Duration

    package init(
        client: GooglePlayClient, ledger: LedgerStore, logger: Logger, ledgerReserve: Duration = .seconds(2),
        acknowledgeBudget: Duration = .seconds(6), priceBudget: Duration = .seconds(2)
    ) {
        self.client = client
        self.ledger = ledger
        self.logger = logger
        self.ledgerReserve = ledgerReserve
        self.acknowledgeBudget = acknowledgeBudget
        self.priceBudget = priceBudget
    }

    /// Keeps the token of the purchase `outcome` recorded (or found recorded) for Google's `answer`, then
    /// acknowledges it and prices a new one. Returns whether Google has taken the acknowledgement.
    ///
    /// - Throws: the ledger's errors keeping the token (the purchase itself is recorded by then).
    package func follow(
        _ outcome: PurchaseOutcome, of answer: ProductPurchase, transaction: VerifiedTransaction, productId: String,
        token: String
    ) async throws -> Bool {
        guard outcome.purchase != nil else { return false }
        let record = GooglePlayToken(
            purchaseToken: token, packageName: transaction.bundleId, environment: transaction.environment,
            transactionId: transaction.transactionId, orderId: answer.orderId, productId: productId,
            consumable: false, purchaseDate: transaction.purchaseDate)
        try await ledger.recordGooglePlayToken(record)
        let metadata: Logger.Metadata = ["transaction": "\(record.transactionId)"]
        // Within what is left of the request, less the reserve for recording Google's answer: a request
        // cut short by its own deadline would answer 503 for a purchase recorded. Not in time: the sync's.
        guard let deadline = RequestBudget.deadline(budget: acknowledgeBudget, reserve: ledgerReserve) else {
            logger.notice(
                "no time left in this request to acknowledge a Google Play purchase; the sync does", metadata: metadata)
            return false
        }
        let acknowledged = await GooglePlayAcknowledger(client: client, ledger: ledger, logger: logger)
            .acknowledge(record, alreadyAcknowledged: answer.isAcknowledged, deadline: deadline)
        if case .recorded = outcome { await learnPrice(record) }
        return acknowledged
    }

    /// Asks Google's Orders API what the new purchase `record` charged, within what is left of the request
    /// less the reserve for booking it, and books it; otherwise (no time, Google silent or not saying) the
    /// purchase stays unpriced for the sync. Never fails the purchase.
    private func learnPrice(_ record: GooglePlayToken) async {
        let metadata: Logger.Metadata = ["transaction": "\(record.transactionId)"]
        guard let deadline = RequestBudget.deadline(budget: priceBudget, reserve: ledgerReserve) else {
            logger.notice(
                "no time left in this request to price a Google Play purchase; the sync does", metadata: metadata)
            return
        }
        do {
            let outcome = try await GooglePlayPricer(client: client, ledger: ledger, logger: logger)
                .price(record, deadline: deadline)
            if case .notPriced(let why) = outcome {
                logger.notice(
                    "a Google Play purchase stays unpriced for now",
                    metadata: metadata.merging(["why": "\(why)"]) { $1 })
            }
        } catch {
            logger.notice(
                "could not price a Google Play purchase; the sync does",
                metadata: metadata.merging(["error": "\(error)"]) { $1 })
        }
    }

    /// What became of a pending purchase's claim when Google was asked about it again.
    package enum Completion: Sendable {
        /// Nobody posted this token pending.
        case unclaimed
        /// Google still waits for the payment.
        case stillPending
        /// Google says the payment was cancelled: nothing recorded.
        case cancelled
        /// Recorded for the claimant now or before (the ledger's outcome: a conflict when another user
        /// recorded the token first).
        case recorded(PurchaseOutcome)
    }

    /// Records the pending purchase `purchaseToken` for the user who posted it, once Google says it is
    /// paid: as that user's post would (the same checks: the catalog's product, the account id, a token
    /// another user recorded refused), then followed as any recording is.
    ///
    /// - Throws: ``GooglePlayError`` (Google did not answer), ``GooglePlayRefusal`` (an account id that is not
    ///   a UUID), `LedgerError` (a product the catalog no longer sells, another user's account id), or
    ///   `PostgresError`.
    package func complete(purchaseToken: String) async throws -> Completion {
        guard let claim = try await ledger.googlePlayPendingClaim(purchaseToken: purchaseToken) else {
            return .unclaimed
        }
        guard let deadline = RequestBudget.deadline(budget: acknowledgeBudget, reserve: ledgerReserve) else {
            throw GooglePlayError(.timeout, "no time left in this request to ask Google Play")
        }
        let answer = try await client.within(deadline).productPurchase(
            productId: claim.productId, token: purchaseToken)
        switch answer.purchaseState {
        case .purchased?: break
        case .pending?: return .stillPending
        case .cancelled?, nil: return .cancelled
        }
        let transaction = try GooglePlayDesk.transaction(
            answer, packageName: claim.packageName, productId: claim.productId, token: purchaseToken)
        let outcome = try await ledger.recordPurchase(transaction, for: claim.uid)
        _ = try await follow(
            outcome, of: answer, transaction: transaction, productId: claim.productId, token: purchaseToken)
        return .recorded(outcome)
    }
}
