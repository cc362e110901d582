import Foundation
import Logging
import Postgres
import Receipts

extension LedgerStore {
    /// Records a verified store transaction for a user: the purchase, its journal entry (with
    /// postings unless family-shared or unpriced), the grant and its history, in one statement.
    ///
    /// Idempotent: the same transaction posted again by the same user with the same evidence is a
    /// `duplicate` (the stored purchase); posted by another user, or with other evidence, it is a
    /// `conflict` and nothing is written. Refund events that arrived before the purchase are applied
    /// in the same transaction.
    ///
    /// Round trips: one for a new purchase (a single auto-committed statement), two for a duplicate
    /// or conflict (the statement, then a read of the stored row). Only when a refund event for the
    /// transaction was recorded first does it take the slower path (the statement is refused by the
    /// `store_transactions` key, then BEGIN, the statement taking that row's lock, the refund
    /// application, COMMIT).
    ///
    /// A duplicate that brings the price of a purchase recorded unpriced books that price
    /// (``learningPrice(from:_:)``).
    ///
    /// A transaction whose `appAccountToken` is not the user's (the token of their first purchase
    /// that carried one) is refused, checked inside the statement (`LedgerStore+AccountToken`).
    ///
    /// - Parameter claimingAccountToken: whether a first purchase carrying a token sets the user's token;
    ///   false for a restore (the history is Apple's, not the app's as signed in by this user), which is
    ///   still refused a token other than the user's.
    /// - Throws: `LedgerError` (`.userNotRegistered`, `.unknownProduct`, `.productRetired` (a purchase
    ///   dated on or after its item's retirement), `.accountTokenMismatch`, `.invalidInput`) with nothing
    ///   written, or `PostgresError`.
    public func recordPurchase(
        _ transaction: VerifiedTransaction, for uid: String, claimingAccountToken: Bool = true
    ) async throws -> PurchaseOutcome {
        try Validation.uid(uid)
        try Validation.transaction(transaction)
        let input = PurchaseInput(transaction: transaction, uid: uid, claimsAccountToken: claimingAccountToken)
        let outcome: PurchaseOutcome
        do {
            if let revocation = RefundEvent(revocationOf: transaction) {
                outcome = try await recordRevokedPurchase(input, revocation: revocation)
            } else {
                outcome = try await recordNewPurchase(input)
            }
        } catch let error as PostgresError where error.sqlState == .accountTokenTaken {
            // Another first purchase of this user set another token at the same time; rolled back.
            throw LedgerError.accountTokenMismatch()
        } catch let error as LedgerError where error.code == .unknownProduct {
            // No item on sale for the product: retired before this purchase, or unknown (`CatalogStore+Admin`).
            throw try await productRefusal(input)
        }
        return await learningPrice(from: transaction, outcome)
    }

    /// A purchase recorded unpriced before (a classic receipt's entry while Apple did not answer) that
    /// comes back priced (Apple's signed transaction: a re-post Apple now prices, a restore, a StoreKit 2
    /// post) gets that price as a price learned later: a `price_learned` journal entry booked once
    /// (`recordLearnedPrice`), as a sync would book it, and the duplicate shows it. A failure to book it
    /// leaves the duplicate as it was (logged): the purchase is recorded, and a sync prices it later.
    private func learningPrice(
        from transaction: VerifiedTransaction, _ outcome: PurchaseOutcome
    ) async
        -> PurchaseOutcome
    {
        guard transaction.priceMilli != nil, case .duplicate(var purchase) = outcome, purchase.price == nil else {
            return outcome
        }
        do {
            switch try await recordLearnedPrice(transaction) {
            case .recorded(let price), .duplicate(let price):
                purchase.price = price
                purchase.storefront = purchase.storefront ?? transaction.storefront
            case .conflict, .evidenceDiffers, .familyShared, .notRecorded:
                break
            }
        } catch {
            logger.warning(
                "could not book the price of a purchase recorded unpriced",
                metadata: ["transaction": "\(transaction.transactionId)", "error": "\(error)"])
        }
        return .duplicate(purchase)
    }

    private func recordNewPurchase(_ input: PurchaseInput) async throws -> PurchaseOutcome {
        let inserted: InsertResult
        do {
            // Alone, or with the purchases that arrive together (group commit, `GroupCommit`).
            inserted = try await batcher.insert(input)
        } catch let error as PostgresError
            where error.sqlState == .uniqueViolation && error.constraint == "store_transactions_pkey"
        {
            // A refund event for this transaction came first: record under its lock and apply it.
            return try await recordPurchaseAfterRefundEvents(input)
        }
        try inserted.refuseRefused(input)
        if let recordedAt = inserted.recordedAt {
            return .recorded(input.purchase(item: inserted.item!, recordedAt: recordedAt, state: .live))
        }
        return try await classifyExisting(input)
    }

    /// The slow path: a refund event for the transaction exists, so take the transaction's lock,
    /// insert, and apply the events with a snapshot taken after the lock.
    private func recordPurchaseAfterRefundEvents(_ input: PurchaseInput) async throws -> PurchaseOutcome {
        let recorded: Purchase? = try await client.withTransaction(.retrying(3)) { connection in
            let inserted = try await connection.query(PurchaseStatement.single(input, lockingTransaction: true))
                .single()
                .insertResult()
            try inserted.refuseRefused(input)
            guard let recordedAt = inserted.recordedAt else { return nil }
            try await betweenStatements?("purchase-before-refund-application", connection)
            let state = try await applyRefundEvents(
                store: input.store, environment: input.environment, transactionId: input.transactionId, on: connection)
            return input.purchase(item: inserted.item!, recordedAt: recordedAt, state: state ?? .live)
        }
        if let recorded { return .recorded(recorded) }
        return try await classifyExisting(input)
    }

    /// The transaction is already recorded: the same user with the same evidence, or with evidence
    /// that says the same about the purchase, makes a duplicate; anything else a conflict.
    ///
    /// "Says the same": the store re-signs a transaction whenever it is fetched again (a new
    /// `signedDate`, so other evidence bytes), and a client re-posting it honestly must get its
    /// purchase back. Every recorded field but the signing time must then match, with two allowances
    /// for a classic receipt's entry beside Apple's signed transaction of the same purchase (the App
    /// Store Server API prices classic purchases when it answers): a side without price or storefront
    /// says nothing about them, and purchase times agree to the second (classic receipts carry
    /// seconds, signed transactions milliseconds).
    func classifyExisting(_ input: PurchaseInput) async throws -> PurchaseOutcome {
        let rows = try await client.query(
            """
            SELECT p.evidence_sha256 = \(input.evidence)
                   OR (p.original_transaction_id = \(input.originalTransactionId)::text
                       AND p.product_id = \(input.productId)::text
                       AND date_trunc('second', p.purchased_at) = date_trunc('second', \(input.purchaseDate)::timestamptz)
                       AND ((p.price_milli IS NOT DISTINCT FROM \(input.priceMilli)::bigint
                             AND p.currency IS NOT DISTINCT FROM \(input.currency)::text)
                            OR p.price_milli IS NULL OR \(input.priceMilli)::bigint IS NULL)
                       AND (p.storefront IS NOT DISTINCT FROM \(input.storefront)::text
                            OR p.storefront IS NULL OR \(input.storefront)::text IS NULL)
                       AND p.ownership = \(input.ownership)::text
                       AND p.app_account_token IS NOT DISTINCT FROM \(input.appAccountToken)::uuid) AS same_evidence,
                   \(unsafeSQL: Purchase.selectColumns)
            FROM purchases p
            WHERE p.store = \(input.store)::text AND p.environment = \(input.environment)::text
              AND p.transaction_id = \(input.transactionId)::text
            """)
        guard let row = rows.first else {
            // Rows are never deleted, so ON CONFLICT DO NOTHING always leaves one to find.
            throw PostgresError(
                code: .unexpectedResponse, message: "purchase \(input.transactionId) was neither inserted nor found")
        }
        let existing = try Purchase(row: row)
        if existing.uid != input.uid { return .conflict(.ownedByAnotherUser) }
        guard try row.decode(Bool.self, column: "same_evidence") else { return .conflict(.differentEvidence) }
        return .duplicate(existing)
    }
}

/// A transaction's values as the statements bind them.
struct PurchaseInput: Sendable {
    let transaction: VerifiedTransaction
    let uid: String
    let book: String
    /// Whether this purchase, the user's first carrying a token, sets the user's token.
    let claimsAccountToken: Bool

    init(transaction: VerifiedTransaction, uid: String, claimsAccountToken: Bool = true) {
        self.transaction = transaction
        self.uid = uid
        self.book = LedgerBook.name(store: transaction.store, environment: transaction.environment)
        self.claimsAccountToken = claimsAccountToken
    }

    var store: String { transaction.store.rawValue }
    var environment: String { transaction.environment.rawValue }
    var transactionId: String { transaction.transactionId }
    var originalTransactionId: String { transaction.originalTransactionId }
    var productId: String { transaction.productId }
    var purchaseDate: Date { transaction.purchaseDate }
    var priceMilli: Int64? { transaction.priceMilli }
    var currency: String? { transaction.currency }
    var storefront: String? { transaction.storefront }
    var ownership: String { transaction.ownershipType.rawValue }
    var appAccountToken: UUID? { transaction.appAccountToken }
    var signedDate: Date { transaction.signedDate }
    var evidence: Data { Data(transaction.evidenceSHA256) }

    func purchase(item: ItemID, recordedAt: Date, state: PurchaseState) -> Purchase {
        Purchase(
            uid: uid, store: transaction.store, environment: transaction.environment, transactionId: transactionId,
            originalTransactionId: originalTransactionId, productId: productId, item: item, book: book,
            purchaseDate: purchaseDate,
            price: priceMilli.flatMap { amount in currency.map { Money(amountMilli: amount, currency: $0) } },
            storefront: storefront, ownershipType: transaction.ownershipType, appAccountToken: appAccountToken,
            signedDate: signedDate, evidenceSHA256Hex: transaction.evidenceSHA256Hex, recordedAt: recordedAt,
            state: state)
    }
}

/// What the purchase statement reports.
struct InsertResult: Sendable {
    let registered: Bool
    let item: ItemID?
    /// Set when this statement inserted the purchase.
    let recordedAt: Date?
    /// False when the transaction's appAccountToken is not its user's (then nothing was inserted).
    let tokenAccepted: Bool

    /// Throws why the statement inserted nothing, when that is a refusal (an unregistered user, a
    /// foreign token, an unknown product: in this order, as the API has always answered).
    func refuseRefused(_ input: PurchaseInput) throws {
        guard registered else { throw LedgerError.userNotRegistered(input.uid) }
        guard tokenAccepted else { throw LedgerError.accountTokenMismatch() }
        guard item != nil else {
            throw LedgerError(.unknownProduct, "product \(input.productId) is not in the catalog")
        }
    }
}

extension PostgresRow {
    func insertResult() throws -> InsertResult {
        let (registered, kind, index, recordedAt, tokenAccepted) = try decode((Bool, String?, Int?, Date?, Bool).self)
        let item = kind.flatMap(ItemKind.init(rawValue:)).flatMap { kind in index.map { ItemID(kind: kind, index: $0) }
        }
        return InsertResult(registered: registered, item: item, recordedAt: recordedAt, tokenAccepted: tokenAccepted)
    }
}

extension LedgerStore {
    /// The statement `recordPurchase` sends for a new purchase of `transaction` by `uid`, so the
    /// benchmarks drive exactly what the server sends (text and bindings) outside of it.
    package static func newPurchaseStatement(_ transaction: VerifiedTransaction, for uid: String) -> PostgresQuery {
        PurchaseStatement.single(PurchaseInput(transaction: transaction, uid: uid), lockingTransaction: false)
    }
}
