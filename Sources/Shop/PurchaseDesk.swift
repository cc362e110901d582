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
    /// Refused proofs, purchase requests and price lookups per user.
    var limits = UserLimits()
    /// Price lookups shared by concurrent requests (one server's).
    var lookups = PriceLookups()
    var logger = Logger(label: "shopledger.purchases")

    package init(
        prover: any PurchaseProver, ledger: LedgerStore, counters: any PurchaseCounters,
        appStore: AppStoreServerAPIClient? = nil, priceBudget: Duration = .seconds(3),
        ledgerReserve: Duration = .seconds(1), limits: UserLimits = UserLimits(),
        lookups: PriceLookups = PriceLookups(), logger: Logger = Logger(label: "shopledger.purchases")
    ) {
        self.prover = prover
        self.ledger = ledger
        self.counters = counters
        self.appStore = appStore
        self.priceBudget = priceBudget
        self.ledgerReserve = ledgerReserve
        self.limits = limits
        self.lookups = lookups
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
        let proven = try await verifying(for: uid, countingPurchase: true) { () async throws(ReceiptRefusal) in
            try await prover.proveEach(receipt: receipt)
        }
        // One lookup prices every entry (they are one customer's).
        let prices = await priced(proven.compactMap(\.accepted), for: uid)
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
        let transaction = try await verifying(for: uid, countingPurchase: true) { () async throws(ReceiptRefusal) in
            try await verify(proof)
        }
        return try await record(
            await priced([transaction], for: uid)[transaction.transactionId] ?? transaction, for: uid)
    }

    /// Proves `proof` for `uid` without recording it (a restore's proof of ownership).
    ///
    /// - Throws: as ``verifying(for:countingPurchase:_:)``.
    package func proven(_ proof: Proof, for uid: String) async throws -> VerifiedTransaction {
        try await verifying(for: uid, countingPurchase: false) { () async throws(ReceiptRefusal) in
            try await verify(proof)
        }
    }

    /// Proves every purchase `receipt` holds for `uid`, without recording them; refused as ``proven(_:for:)``.
    package func provenEntries(receipt: String, for uid: String) async throws -> [ProvenEntry] {
        try await verifying(for: uid, countingPurchase: false) { () async throws(ReceiptRefusal) in
            try await prover.proveEach(receipt: receipt)
        }
    }

    private func verify(_ proof: Proof) async throws(ReceiptRefusal) -> VerifiedTransaction {
        switch proof {
        case .signedTransaction(let jws): try await prover.verifyTransaction(jws)
        case .receipt(let receipt, let productId): try await prover.prove(receipt: receipt, productId: productId)
        }
    }

    /// Runs `verification` of a proof of `uid`'s within its refused-proof allowance, taken as a
    /// reservation: a token and a place in flight on admission, before anything is verified; the token
    /// given back when the proof is accepted or its verification is cut short (no verdict), kept when it
    /// is refused. With `countingPurchase`, a purchase request is spent from the purchase limit too.
    ///
    /// - Throws: `RateLimitedError` (nothing verified), `ReceiptRefusal` (counted), or
    ///   `CancellationError` when the request ended first.
    private func verifying<T>(
        for uid: String, countingPurchase: Bool, _ verification: () async throws(ReceiptRefusal) -> T
    ) async throws -> T {
        let ticket = try admitProof(uid)
        if countingPurchase, let wait = limits.purchases.take(uid) {
            limits.refusedProofs.release(ticket, refund: true)
            counters.recordRateLimited("purchases")
            throw RateLimitedError(limit: "purchases", retryAfter: wait)
        }
        do throws(ReceiptRefusal) {
            let value = try await verification()
            limits.refusedProofs.release(ticket, refund: true)
            return value
        } catch {
            let cutShort = error.reason == .cancelled
            limits.refusedProofs.release(ticket, refund: cutShort)
            if cutShort { throw CancellationError() }
            counters.recordRefusal(error.reason.rawValue)
            throw error
        }
    }

    /// Admits one proof (or claim of ownership) of `uid`'s: a token of its refused-proof allowance and a
    /// place among its proofs in flight, both taken now; the ticket goes back through
    /// `limits.refusedProofs.release(_:refund:)`.
    func admitProof(_ uid: String) throws(RateLimitedError) -> UserRateLimiter.Ticket {
        switch limits.refusedProofs.admit(uid) {
        case .success(let ticket):
            return ticket
        case .failure(let refusal):
            let limit = refusal.reason == .tooManyInFlight ? "proofs_in_flight" : "refused_proofs"
            counters.recordRateLimited(limit)
            throw RateLimitedError(limit: limit, retryAfter: refusal.retryAfter)
        }
    }

    /// Runs `claim`, a restore's check that the history a bare transaction id names is `uid`'s, within
    /// `uid`'s refused-proof allowance as a proof is: admitted first; a claim that does not hold
    /// (``OwnershipNotProven``) spends the token, any other outcome gives it back.
    package func claimingOwnership<T: Sendable>(by uid: String, _ claim: () async throws -> T) async throws -> T {
        let ticket = try admitProof(uid)
        do {
            let value = try await claim()
            limits.refusedProofs.release(ticket, refund: true)
            return value
        } catch let error as OwnershipNotProven {
            limits.refusedProofs.release(ticket, refund: false)
            counters.recordRefusal("proof_required")
            throw error
        } catch {
            limits.refusedProofs.release(ticket, refund: true)
            throw error
        }
    }

    /// Apple's signed transactions for the unpriced App Store transactions among `transactions` (a
    /// classic receipt's entries, one customer's, posted by `uid`), by transaction id: recorded with
    /// Apple's price, currency and storefront. One call asks for them all: Get Transaction Info for one,
    /// the customer's transaction history for several, verified by the same prover.
    ///
    /// Apple is asked only about what the ledger does not hold priced already (a duplicate is answered
    /// from the ledger), only once for requests that ask at the same time (``PriceLookups``), and within
    /// `uid`'s price-lookup allowance (`UserLimits.priceLookups`). Inside a request the call gets at most
    /// ``priceBudget``, cut to the request's time left less ``ledgerReserve`` (``RequestBudget``), and
    /// Apple's `Retry-After` past that is not waited for. When the API is not configured, is not asked,
    /// does not answer in time, or does not list the same purchase, the transaction is missing from the
    /// answer and is recorded unpriced: a sync prices it later.
    package func priced(_ transactions: [VerifiedTransaction], for uid: String) async -> [String: VerifiedTransaction] {
        let unpriced = transactions.filter { $0.store == .appStore && $0.priceMilli == nil }
        guard let appStore, let first = unpriced.first else { return [:] }
        let held: Set<String>
        do {
            held = try await ledger.pricedTransactions(unpriced.map(\.transactionId), in: first.environment)
        } catch {
            // The ledger will not record them either; Apple's quota is not spent on that.
            logger.warning("could not read which entries are priced; not asking Apple", metadata: ["error": "\(error)"])
            return [:]
        }
        let unknown = unpriced.filter { !held.contains($0.transactionId) }
        guard !unknown.isEmpty else { return [:] }
        return await lookups.prices(of: unknown) { missing in await askApple(missing, appStore: appStore, for: uid) }
    }

    /// One call to Apple for `unpriced` (same customer, same environment), within `uid`'s allowance and
    /// the request's budget; the transactions it prices, by id.
    private func askApple(
        _ unpriced: [VerifiedTransaction], appStore: AppStoreServerAPIClient, for uid: String
    ) async -> [String: VerifiedTransaction] {
        guard let first = unpriced.first else { return [:] }
        let ids = unpriced.map(\.transactionId).joined(separator: ",")
        guard let deadline = RequestBudget.deadline(budget: priceBudget, reserve: ledgerReserve) else {
            logger.warning(
                "no time left in this request to ask Apple for a price; recording unpriced",
                metadata: ["transactions": "\(ids)"])
            return [:]
        }
        if limits.priceLookups.take(uid) != nil {
            counters.recordRateLimited("price_lookups")
            logger.notice(
                "this user asked Apple for prices too often; recording unpriced",
                metadata: ["uid": "\(uid)", "transactions": "\(ids)"])
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

/// A restore named a history by a bare transaction id, and the caller owns none of its purchases: 403
/// `proof_required`, nothing written.
package struct OwnershipNotProven: Error, Sendable, CustomStringConvertible {
    package init() {}

    package var description: String {
        "restoring by transaction id needs a purchase of that history on this account; send signedTransaction "
            + "or receipt from the device instead"
    }
}
