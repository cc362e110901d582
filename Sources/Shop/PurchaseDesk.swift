import AppStoreServerAPI
import Ledger
import Logging
import Receipts

/// Where a purchase is proven and recorded, for both surfaces: the prover checks the proof (no I/O),
/// then the ledger records the verified transaction for the user in one statement. Counts every
/// outcome and refusal in the metrics.
package struct PurchaseDesk: Sendable {
    /// What a client sends as proof of a purchase.
    package enum Proof: Sendable {
        /// A StoreKit 2 signed transaction (JWS).
        case signedTransaction(String)
        /// What the SeSAC `receipt` field holds (a stub receipt, a JWS, or a classic app receipt), and the
        /// product the client says it bought (which selects the entry of a classic receipt).
        case receipt(String, productId: String?)
    }

    let prover: any PurchaseProver
    package let ledger: LedgerStore
    package let counters: any PurchaseCounters
    /// Prices classic receipts' entries (which carry no price) with Apple's signed transaction; nil when
    /// the App Store Server API is not configured, and they are recorded unpriced.
    var appStore: AppStoreServerAPIClient? = nil
    /// The longest a price lookup may take, and the time it leaves the request for the ledger write
    /// (``ServerConfiguration/appStorePriceBudget``, ``ServerConfiguration/appStoreLedgerReserve``).
    var priceBudget: Duration = .seconds(3)
    var ledgerReserve: Duration = .seconds(1)
    /// Refused proofs and purchase requests per user.
    var limits = UserLimits()
    var logger = Logger(label: "shopledger.purchases")

    package init(
        prover: any PurchaseProver, ledger: LedgerStore, counters: any PurchaseCounters,
        appStore: AppStoreServerAPIClient? = nil, priceBudget: Duration = .seconds(3),
        ledgerReserve: Duration = .seconds(1), limits: UserLimits = UserLimits(),
        logger: Logger = Logger(label: "shopledger.purchases")
    ) {
        self.prover = prover
        self.ledger = ledger
        self.counters = counters
        self.appStore = appStore
        self.priceBudget = priceBudget
        self.ledgerReserve = ledgerReserve
        self.limits = limits
        self.logger = logger
    }

    /// What a purchase request recorded: one purchase, or each purchase a classic receipt holds.
    package enum Recorded: Sendable {
        case purchase(PurchaseOutcome)
        case entries([EntryOutcome])
    }

    /// Proves `proof` and records what it proves for `uid`: a classic app receipt sent without the
    /// product it is for records every purchase it holds, each on its own (``purchaseEach(receipt:for:)``);
    /// any other proof (a signed transaction, a stub receipt, a classic receipt with its product) the one
    /// purchase (``purchase(_:for:)``).
    ///
    /// - Throws: as ``purchase(_:for:)``.
    package func record(_ proof: Proof, for uid: String) async throws -> Recorded {
        if case .receipt(let receipt, productId: nil) = proof, ReceiptField(classifying: receipt) == .appReceipt {
            return .entries(try await purchaseEach(receipt: receipt, for: uid))
        }
        return .purchase(try await purchase(proof, for: uid))
    }

    /// What became of one in-app entry of a receipt recorded with ``purchaseEach(receipt:for:)``.
    package struct EntryOutcome: Sendable {
        package var transactionId: String
        package var productId: String
        /// The ledger's outcome, or why the entry was not recorded (`unsupported_product_type`,
        /// `unknown_product`).
        package var result: Result<PurchaseOutcome, EntryRefusal>
    }

    package struct EntryRefusal: Error, Sendable {
        package var code: String
        package var message: String
    }

    /// Proves a receipt and records every purchase it holds for `uid`, each on its own: one entry's
    /// refusal (a product the catalog does not sell, say) does not stop the others.
    ///
    /// - Throws: `ReceiptRefusal` when the receipt itself is refused, `LedgerError.userNotRegistered`, or
    ///   `PostgresError`.
    package func purchaseEach(receipt: String, for uid: String) async throws -> [EntryOutcome] {
        try admit(uid)
        let proven = try await provenEntries(receipt: receipt, for: uid)
        // One lookup prices every entry (they are one customer's).
        let prices = await priced(proven.compactMap(\.accepted))
        var outcomes: [EntryOutcome] = []
        for entry in proven {
            let transaction = entry.transaction
            let result: Result<PurchaseOutcome, EntryRefusal>
            if let refusal = entry.refusal {
                counters.recordRefusal(refusal.reason.rawValue)
                result = .failure(EntryRefusal(code: refusal.reason.rawValue, message: refusal.message))
            } else {
                do {
                    result = .success(try await record(prices[transaction.transactionId] ?? transaction, for: uid))
                } catch let error as LedgerError
                    where [.unknownProduct, .productRetired, .accountTokenMismatch].contains(error.code)
                {
                    result = .failure(EntryRefusal(code: error.code.rawValue, message: error.message))
                }
            }
            outcomes.append(
                EntryOutcome(transactionId: transaction.transactionId, productId: transaction.productId, result: result)
            )
        }
        return outcomes
    }

    /// Proves `proof` and records the purchase for `uid`.
    ///
    /// - Throws: `ReceiptRefusal` when the proof is refused, `LedgerError` when the ledger refuses the
    ///   transaction (unregistered user, product not in the catalog), both with nothing written; or
    ///   `PostgresError`.
    package func purchase(_ proof: Proof, for uid: String) async throws -> PurchaseOutcome {
        try admit(uid)
        let transaction = try await proven(proof, for: uid)
        return try await record(await priced([transaction])[transaction.transactionId] ?? transaction, for: uid)
    }

    /// Proves `proof` for `uid` without recording it (a purchase, or a restore's proof of ownership).
    ///
    /// - Throws: `ReceiptRefusal` (counted, and spent from `uid`'s refused-proof allowance), or
    ///   `CancellationError` when the request ended first.
    package func proven(_ proof: Proof, for uid: String) async throws -> VerifiedTransaction {
        do throws(ReceiptRefusal) {
            switch proof {
            case .signedTransaction(let jws): return try await prover.verifyTransaction(jws)
            case .receipt(let receipt, let productId):
                return try await prover.prove(receipt: receipt, productId: productId)
            }
        } catch {
            throw refused(error, for: uid)
        }
    }

    /// Proves every purchase `receipt` holds for `uid`, without recording them; refused as ``proven(_:for:)``.
    package func provenEntries(receipt: String, for uid: String) async throws -> [ProvenEntry] {
        do throws(ReceiptRefusal) {
            return try await prover.proveEach(receipt: receipt)
        } catch {
            throw refused(error, for: uid)
        }
    }

    /// Whether `uid` may have a proof verified now: under its purchase limit (which this spends) and its
    /// refused-proof limit (which only a refusal spends).
    private func admit(_ uid: String) throws(RateLimitedError) {
        try admitProof(uid)
        if let wait = limits.purchases.take(uid) {
            counters.recordRateLimited("purchases")
            throw RateLimitedError(limit: "purchases", retryAfter: wait)
        }
    }

    /// Whether `uid` is under its refused-proof limit (checked, not spent).
    package func admitProof(_ uid: String) throws(RateLimitedError) {
        if let wait = limits.refusedProofs.check(uid) {
            counters.recordRateLimited("refused_proofs")
            throw RateLimitedError(limit: "refused_proofs", retryAfter: wait)
        }
    }

    /// A claim of ownership that did not hold (a restore naming a history that is not `uid`'s): spent
    /// from `uid`'s refused-proof allowance, like a refused proof.
    package func spendRefusedProof(_ uid: String) {
        counters.recordRefusal("proof_required")
        limits.refusedProofs.take(uid)
    }

    /// What a refused proof is answered with: the refusal, counted and spent from `uid`'s refused-proof
    /// allowance; a verification cut short by the request's end (`cancelled`, no verdict) as the
    /// cancellation it is.
    private func refused(_ refusal: ReceiptRefusal, for uid: String) -> any Error {
        guard refusal.reason != .cancelled else { return CancellationError() }
        counters.recordRefusal(refusal.reason.rawValue)
        limits.refusedProofs.take(uid)
        return refusal
    }

    /// Apple's signed transactions for the unpriced App Store transactions among `transactions` (a
    /// classic receipt's entries, one customer's), by transaction id: recorded with Apple's price,
    /// currency and storefront. One call asks for them all: Get Transaction Info for one, the customer's
    /// transaction history for several, verified by the same prover.
    ///
    /// Inside a request the call gets at most ``priceBudget``, cut to the request's time left less
    /// ``ledgerReserve`` (``RequestBudget``), and Apple's `Retry-After` past that is not waited for.
    /// When the API is not configured, does not answer in time, or does not list the same purchase,
    /// the transaction is missing from the answer and is recorded unpriced: a sync prices it later.
    package func priced(_ transactions: [VerifiedTransaction]) async -> [String: VerifiedTransaction] {
        let unpriced = transactions.filter { $0.store == .appStore && $0.priceMilli == nil }
        guard let appStore, let first = unpriced.first else { return [:] }
        let ids = unpriced.map(\.transactionId).joined(separator: ",")
        guard let deadline = RequestBudget.deadline(budget: priceBudget, reserve: ledgerReserve) else {
            logger.warning(
                "no time left in this request to ask Apple for a price; recording unpriced",
                metadata: ["transactions": "\(ids)"])
            return [:]
        }
        let answer: VerifiedTransactions
        do {
            let api = appStore.within(deadline)
            answer =
                unpriced.count == 1
                ? try await api.transactionInfo(first.transactionId, in: first.environment)
                : try await api.transactionHistory(first.transactionId, in: first.environment)
        } catch {
            logger.warning(
                "could not price a classic receipt's entries through the App Store Server API; recording unpriced",
                metadata: ["transactions": "\(ids)", "error": "\(error)"])
            return [:]
        }
        var prices: [String: VerifiedTransaction] = [:]
        for transaction in unpriced {
            guard
                let signed = answer.transactions.first(where: { $0.transactionId == transaction.transactionId }),
                signed.productId == transaction.productId, signed.bundleId == transaction.bundleId,
                signed.environment == transaction.environment, signed.priceMilli != nil
            else {
                logger.warning(
                    "the App Store does not price this transaction; recording it unpriced",
                    metadata: ["transaction": "\(transaction.transactionId)"])
                continue
            }
            prices[transaction.transactionId] = signed
        }
        return prices
    }

    /// Records a proven transaction (here, or by the App Store Server API client, which verifies with the
    /// same prover) for `uid`, counting the outcome: one ledger call, which also books the price of a
    /// purchase recorded unpriced before that comes back priced (`LedgerStore.recordPurchase`).
    ///
    /// - Parameter claimingAccountToken: false for a restore, which never sets the user's appAccountToken.
    package func record(
        _ transaction: VerifiedTransaction, for uid: String, claimingAccountToken: Bool = true
    ) async throws -> PurchaseOutcome {
        do {
            let outcome = try await ledger.recordPurchase(
                transaction, for: uid, claimingAccountToken: claimingAccountToken)
            switch outcome {
            case .recorded: counters.recordPurchase("recorded")
            case .duplicate: counters.recordPurchase("duplicate")
            case .conflict: counters.recordPurchase("conflict")
            }
            return outcome
        } catch let error as LedgerError
            where [.unknownProduct, .productRetired, .accountTokenMismatch].contains(error.code)
        {
            counters.recordRefusal(error.code.rawValue)
            throw error
        }
    }
}
