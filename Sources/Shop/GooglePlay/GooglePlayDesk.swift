import AppleSales
import Crypto
import Foundation
import GooglePlay
import Ledger
import Logging
import Receipts

/// Where a Google Play purchase is verified and recorded: Google's `purchases.products.get` is the proof
/// (asked within the request's budget), the ledger records it as the App Store's purchases are (one
/// statement, idempotent, a token of another user's refused), and Google is then told the purchase was
/// granted (acknowledged; a purchase not acknowledged in three days is refunded by Google). A new purchase
/// is recorded unpriced (Google's purchase answer states no price); what its buyer was charged is then
/// asked of Google's Orders API with the request's time left and booked (``GooglePlayPricer``), or by the
/// sync when the request has no time left or Google does not say.
package struct GooglePlayDesk: Sendable {
    package let client: GooglePlayClient
    /// Records, counts and limits as for App Store purchases.
    let purchases: PurchaseDesk
    /// The longest Google's purchase answer may take inside a request, and the time it leaves the
    /// request for the ledger write and the acknowledgement.
    var verificationBudget: Duration
    var ledgerReserve: Duration
    /// The longest the order lookup of a new purchase may take inside its request (less ``ledgerReserve``
    /// for booking what it states).
    var priceBudget: Duration
    var logger: Logger

    package init(
        client: GooglePlayClient, purchases: PurchaseDesk, verificationBudget: Duration = .seconds(6),
        ledgerReserve: Duration = .seconds(2), priceBudget: Duration = .seconds(2),
        logger: Logger = Logger(label: "shopledger.googleplay")
    ) {
        self.client = client
        self.purchases = purchases
        self.verificationBudget = verificationBudget
        self.ledgerReserve = ledgerReserve
        self.priceBudget = priceBudget
        self.logger = logger
    }

    package var packageName: String { client.packageName }

    /// What a Play purchase request came to.
    package enum Outcome: Sendable {
        /// Recorded now or before (the ledger's outcome); `acknowledged` whether Google has taken the
        /// acknowledgement by the time of the answer (otherwise the acknowledger keeps trying).
        case recorded(PurchaseOutcome, acknowledged: Bool)
        /// Google says the payment is pending: nothing is granted; the app posts the purchase again once
        /// Google completes it.
        case pending
    }

    /// Verifies the purchase `token` of `productId` with Google and records it for `uid`.
    ///
    /// - Throws: ``GooglePlayRefusal`` (nothing written: another package, an unknown token, a cancelled
    ///   purchase, an account id that is not the caller's), ``GooglePlayUnavailable`` (Google did not
    ///   answer in time: nothing written, try again), `RateLimitedError`, `LedgerError` as for App Store
    ///   purchases, or `PostgresError`.
    package func purchase(
        packageName: String, productId: String, token: String, for uid: String
    ) async throws
        -> Outcome
    {
        guard packageName == client.packageName else {
            purchases.counters.recordRefusal("wrong_package")
            throw GooglePlayRefusal(
                .wrongPackage, "this server sells for \(client.packageName), not \(packageName.prefix(100))")
        }
        // Each token costs a call on the app's Google quota: a user's tokens Google refuses are spent from
        // the same refused-proof allowance as Apple proofs (a ticket taken now, given back unless refused).
        let ticket = try purchases.admitProof(uid)
        if let wait = purchases.limits.purchases.take(uid) {
            purchases.limits.refusedProofs.release(ticket, refund: true)
            purchases.counters.recordRateLimited("purchases")
            throw RateLimitedError(limit: "purchases", retryAfter: wait)
        }
        let answer: ProductPurchase
        do {
            answer = try await verified(productId: productId, token: token)
            purchases.limits.refusedProofs.release(ticket, refund: answer.purchaseState != .cancelled)
        } catch let refusal as GooglePlayRefusal {
            purchases.limits.refusedProofs.release(ticket, refund: false)
            throw refusal
        } catch {
            purchases.limits.refusedProofs.release(ticket, refund: true)
            throw error
        }
        switch answer.purchaseState {
        case .purchased?:
            break
        case .pending?:
            // Who posted it, so that Google's push (or the sync) records it for them once it is paid.
            _ = try Self.transaction(answer, packageName: packageName, productId: productId, token: token)
            _ = try await purchases.ledger.claimGooglePlayPending(
                purchaseToken: token, uid: uid, packageName: packageName, productId: productId)
            purchases.counters.recordPurchase("pending")
            return .pending
        case .cancelled?, nil:
            purchases.counters.recordRefusal("purchase_cancelled")
            throw GooglePlayRefusal(.purchaseCancelled, "Google Play says this purchase was cancelled")
        }
        let transaction = try Self.transaction(answer, packageName: packageName, productId: productId, token: token)
        let outcome = try await purchases.record(transaction, for: uid)
        let acknowledged = try await recording.follow(
            outcome, of: answer, transaction: transaction, productId: productId, token: token)
        return .recorded(outcome, acknowledged: acknowledged)
    }

    /// What follows a Play purchase's recording, here and when a pending one completes.
    package var recording: GooglePlayRecording {
        GooglePlayRecording(
            client: client, ledger: purchases.ledger, logger: logger, ledgerReserve: ledgerReserve,
            acknowledgeBudget: verificationBudget, priceBudget: priceBudget)
    }

    /// Google's answer about the purchase, within the request's budget.
    ///
    /// - Throws: ``GooglePlayRefusal`` (`purchase_not_found`) or ``GooglePlayUnavailable``.
    private func verified(productId: String, token: String) async throws -> ProductPurchase {
        guard let deadline = RequestBudget.deadline(budget: verificationBudget, reserve: ledgerReserve) else {
            throw GooglePlayUnavailable(message: "no time left in this request to ask Google Play")
        }
        do {
            return try await client.within(deadline).productPurchase(productId: productId, token: token)
        } catch let error as GooglePlayError where error.code == .invalidInput {
            purchases.counters.recordRefusal("purchase_not_found")
            throw GooglePlayRefusal(.purchaseNotFound, "the purchase token or product id is not one Google issues")
        } catch let error as GooglePlayError
            where error.code == .apiError && [400, 404, 410].contains(error.httpStatus)
        {
            purchases.counters.recordRefusal("purchase_not_found")
            throw GooglePlayRefusal(.purchaseNotFound, "Google Play does not know this purchase of \(productId)")
        } catch let error as GooglePlayError {
            logger.warning("could not verify a Google Play purchase", metadata: ["error": "\(error)"])
            throw GooglePlayUnavailable(
                message: "Google Play did not answer in time: \(error.code)", retryAt: error.retryAt)
        }
    }

    /// The ledger's transaction for Google's answer: `google_play`, `Production` or `Sandbox` (a test
    /// purchase), the orderId (or `token:<SHA-256 of the token>`) as transaction id, unpriced, the
    /// obfuscated account id as the appAccountToken.
    package static func transaction(
        _ answer: ProductPurchase, packageName: String, productId: String, token: String
    ) throws(GooglePlayRefusal) -> VerifiedTransaction {
        var accountToken: UUID?
        if let account = answer.obfuscatedExternalAccountId, !account.isEmpty {
            // The app sets it to the appAccountToken its Apple purchases carry (the user's, docs/google-play.md).
            guard let uuid = UUID(uuidString: account) else {
                throw GooglePlayRefusal(
                    .accountTokenMismatch, "the purchase's obfuscatedAccountId is not this user's appAccountToken")
            }
            accountToken = uuid
        }
        let transactionId = GooglePlayToken.transactionId(orderId: answer.orderId, token: token)
        let evidence = Array(
            SHA256.hash(
                data: Data(
                    [
                        "google_play", packageName, productId, token, answer.orderId ?? "",
                        String(answer.purchaseTimeMillis), String(answer.purchaseStateValue),
                        answer.purchaseType.map(String.init) ?? "", answer.obfuscatedExternalAccountId ?? "",
                    ].joined(separator: "\n").utf8)))
        return VerifiedTransaction(
            store: .googlePlay, environment: answer.isTest ? .sandbox : .production, transactionId: transactionId,
            originalTransactionId: transactionId, bundleId: packageName, productId: productId,
            productType: .nonConsumable, purchaseDate: answer.purchaseDate, originalPurchaseDate: answer.purchaseDate,
            signedDate: Date(), storefront: answer.regionCode.flatMap(StorefrontCountries.storefront(forAlpha2:)),
            appAccountToken: accountToken, evidenceSHA256: evidence)
    }

}

/// Google Play's answer refuses the purchase: nothing written (422, or 409 for another user's account id).
package struct GooglePlayRefusal: Error, Sendable, CustomStringConvertible {
    package struct Code: RawRepresentable, Sendable, Hashable {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package static let wrongPackage = Code(rawValue: "wrong_package")
        package static let purchaseNotFound = Code(rawValue: "purchase_not_found")
        package static let purchaseCancelled = Code(rawValue: "purchase_cancelled")
        package static let accountTokenMismatch = Code(rawValue: "account_token_mismatch")
    }
    package var code: Code
    package var message: String
    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
    package var description: String { "\(code.rawValue): \(message)" }
}

/// Google Play did not answer in time: nothing was written and nothing refused; the client tries again
/// (503 `google_play_unavailable`, with `Retry-After`).
package struct GooglePlayUnavailable: Error, Sendable, CustomStringConvertible {
    package var message: String
    package var retryAt: Date?
    package init(message: String, retryAt: Date? = nil) {
        self.message = message
        self.retryAt = retryAt
    }
    package var description: String { message }
}

/// Tells Google a recorded purchase was granted (acknowledged; a consumable also consumed) and records
/// that it did: inside the purchase request, then by the sync until Google's three days run out.
package struct GooglePlayAcknowledger: Sendable {
    let client: GooglePlayClient
    let ledger: LedgerStore
    let logger: Logger

    package init(client: GooglePlayClient, ledger: LedgerStore, logger: Logger) {
        self.client = client
        self.ledger = ledger
        self.logger = logger
    }

    /// Tells Google the purchase was granted (and consumes a consumable), then records that it did; a
    /// failure is logged and left to the acknowledger. Returns whether it is acknowledged now.
    package func acknowledge(
        _ record: GooglePlayToken, alreadyAcknowledged: Bool = false, deadline: ContinuousClock.Instant? = nil
    ) async -> Bool {
        let api = deadline.map { client.within($0) } ?? client
        do {
            if !alreadyAcknowledged {
                do {
                    try await api.acknowledge(productId: record.productId, token: record.purchaseToken)
                } catch let error as GooglePlayError
                    where error.httpStatus == 400 && error.apiStatus == "FAILED_PRECONDITION"
                {
                    // Acknowledged before (by us, or by the app itself): Google's answer then, or a cancelled purchase.
                    let current = try await api.productPurchase(
                        productId: record.productId, token: record.purchaseToken)
                    guard current.isAcknowledged else { throw error }
                }
            }
            if record.consumable {
                try await api.consume(productId: record.productId, token: record.purchaseToken)
            }
            try await ledger.recordGooglePlayAcknowledgement(
                purchaseToken: record.purchaseToken, consumed: record.consumable)
            return true
        } catch {
            logger.notice(
                "a Google Play purchase is not acknowledged yet; the acknowledger retries",
                metadata: ["transaction": "\(record.transactionId)", "error": "\(error)"])
            return false
        }
    }
}
