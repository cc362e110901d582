import AppStoreServerAPI
import Ledger
import Logging
import Receipts

/// Restoring a user's App Store purchases from Apple's transaction history, given one proof of whose
/// history it is (the rule; `POST /api/v1/purchases/restore` only translates):
///
/// - a StoreKit 2 signed transaction from the device, verified like a purchase: the history is its
///   customer's, asked in its environment;
/// - a classic app receipt from the device, verified offline: the history of its entries' customer;
/// - a bare transaction id, which anyone may have read off an e-mailed receipt: taken only from a caller
///   who already owns a verified purchase in that history, in the history's environment; otherwise
///   ``OwnershipNotProven`` and nothing written (a caller with no App Store purchase at all is refused
///   without asking Apple). An appAccountToken is no proof (``RestoreStanding``). A refusal spends the
///   refused-proof allowance.
///
/// Every entry of the history is verified like a client-sent transaction and recorded for the caller
/// with the usual idempotency, never setting the caller's appAccountToken. A purchase stays with whoever
/// recorded it first: the transaction named (or proven) recorded for another user is
/// ``RestoreError/namedTransactionTaken(_:)`` with nothing written; other entries recorded for another
/// user come back as `conflict` outcomes, entries the ledger refuses (unknown or retired product,
/// another account token) as `refused`.
///
/// Apple is asked within ``budget``, cut to the request's time left less ``ledgerReserve``
/// (``RequestBudget``), and within the caller's restore allowance (``limit``).
package struct RestoreDesk: Sendable {
    /// One proof of whose history to restore.
    package enum Proof: Sendable {
        case signedTransaction(String)
        case receipt(String)
        case transactionId(String)
    }

    /// What restoring did with one transaction of the history.
    package struct Outcome: Sendable {
        package enum Kind: String, Sendable {
            case recorded, duplicate, conflict, refused
        }

        package let transaction: VerifiedTransaction
        package let kind: Kind
        /// Why a conflict or a refusal (the ledger's code).
        package let code: String?
        /// The purchase as recorded (recorded or duplicate).
        package let purchase: Purchase?
    }

    /// A restore's result: the environment whose history answered, each transaction's outcome (the
    /// named one first), and how many authentic transactions of types the shop does not sell were skipped.
    package struct Restored: Sendable {
        package let environment: StoreEnvironment
        package let outcomes: [Outcome]
        package let skipped: Int
    }

    let api: AppStoreServerAPIClient
    let desk: PurchaseDesk
    /// Restores per user: each asks Apple.
    let limit: UserRateLimiter
    /// The longest a restore waits for Apple (``ServerConfiguration/appStoreRestoreBudget``).
    let budget: Duration
    /// The request's time kept for recording the history (``ServerConfiguration/appStoreLedgerReserve``).
    let ledgerReserve: Duration

    package init(
        api: AppStoreServerAPIClient, desk: PurchaseDesk, limit: UserRateLimiter, budget: Duration = .seconds(6),
        ledgerReserve: Duration = .seconds(1)
    ) {
        self.api = api
        self.desk = desk
        self.limit = limit
        self.budget = budget
        self.ledgerReserve = ledgerReserve
    }

    /// Whose history a restore asks for: a transaction of it, and how the caller vouched for it.
    private struct Anchor {
        var transactionId: String
        /// Known when proven (the proof says); a bare id is looked up in production, then the sandbox.
        var environment: StoreEnvironment?
        var proven: Bool
    }

    /// Restores `uid`'s history as `proof` names it; logs the result on `logger` (the request's).
    package func restore(_ proof: Proof, for uid: String, logger: Logger? = nil) async throws -> Restored {
        let anchor: Anchor
        let history: VerifiedTransactions
        switch proof {
        case .signedTransaction(let jws):
            let transaction = try await desk.proven(.signedTransaction(jws), for: uid)
            anchor = Anchor(
                transactionId: transaction.transactionId, environment: transaction.environment, proven: true)
            history = try await self.history(of: anchor, for: uid)
        case .receipt(let receipt):
            anchor = try await receiptAnchor(receipt, for: uid)
            history = try await self.history(of: anchor, for: uid)
        case .transactionId(let id):
            // A claim, not a proof: admitted against the refused-proof allowance like one, and spent
            // from it when the history turns out not to be the caller's.
            anchor = Anchor(transactionId: id, environment: nil, proven: false)
            history = try await desk.claimingOwnership(by: uid) {
                let standing = try await desk.ledger.restoreStanding(
                    of: uid, environment: .production, transactionIds: [])
                guard standing.couldOwnAHistory else { throw OwnershipNotProven() }
                let history = try await self.history(of: anchor, for: uid)
                try await requireOwnership(of: history, by: uid)
                return history
            }
        }

        // The transaction named first: if it is another user's, nothing of the history is recorded.
        let named = anchor.transactionId
        let ordered = history.transactions.sorted {
            ($0.transactionId == named ? 0 : 1) < ($1.transactionId == named ? 0 : 1)
        }
        var outcomes: [Outcome] = []
        for transaction in ordered {
            do {
                switch try await desk.record(transaction, for: uid, claimingAccountToken: false) {
                case .recorded(let purchase):
                    outcomes.append(Outcome(transaction: transaction, kind: .recorded, code: nil, purchase: purchase))
                case .duplicate(let purchase):
                    outcomes.append(Outcome(transaction: transaction, kind: .duplicate, code: nil, purchase: purchase))
                case .conflict(let reason):
                    if transaction.transactionId == named, reason == .ownedByAnotherUser {
                        throw RestoreError.namedTransactionTaken(reason.rawValue)
                    }
                    outcomes.append(
                        Outcome(transaction: transaction, kind: .conflict, code: reason.rawValue, purchase: nil))
                }
            } catch let error as LedgerError
                where [.unknownProduct, .productRetired, .accountTokenMismatch].contains(error.code)
            {
                // The named transaction bound to another account token: the history is not the caller's.
                if transaction.transactionId == named, error.code == .accountTokenMismatch { throw error }
                outcomes.append(
                    Outcome(transaction: transaction, kind: .refused, code: error.code.rawValue, purchase: nil))
            }
        }
        (logger ?? desk.logger).info(
            "restored purchases from the App Store",
            metadata: [
                "uid": "\(uid)", "transactions": "\(outcomes.count)", "environment": "\(history.environment)",
                "proof": "\(anchor.proven ? "device" : "ownership")",
            ])
        return Restored(environment: history.environment, outcomes: outcomes, skipped: history.skipped.count)
    }

    /// The customer's history `anchor` names, asked within the caller's restore allowance and the
    /// request's budget.
    private func history(of anchor: Anchor, for uid: String) async throws -> VerifiedTransactions {
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
        guard let entry = entries.first else { throw RestoreError.nothingToRestore }
        guard entry.store == .appStore else { throw RestoreError.notAnAppStoreReceipt }
        return Anchor(transactionId: entry.transactionId, environment: entry.environment, proven: true)
    }

    /// A bare id's history is the caller's when they own one of its purchases already, in its
    /// environment; otherwise ``OwnershipNotProven``, nothing written.
    private func requireOwnership(of history: VerifiedTransactions, by uid: String) async throws {
        let standing = try await desk.ledger.restoreStanding(
            of: uid, environment: history.environment, transactionIds: history.transactions.map(\.transactionId))
        guard standing.ownsOneOfThem else { throw OwnershipNotProven() }
    }
}

/// A restore refused with nothing written.
package enum RestoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The transaction the proof names is recorded for another user (the ledger's conflict code).
    case namedTransactionTaken(String)
    /// The receipt lists no in-app purchase.
    case nothingToRestore
    /// The receipt is not the App Store's (a stub's history is not kept by Apple).
    case notAnAppStoreReceipt

    package var code: String {
        switch self {
        case .namedTransactionTaken(let code): code
        case .nothingToRestore: "nothing_to_restore"
        case .notAnAppStoreReceipt: "not_an_app_store_receipt"
        }
    }

    package var description: String {
        switch self {
        case .namedTransactionTaken: "this transaction is recorded for another user"
        case .nothingToRestore: "the receipt lists no in-app purchase"
        case .notAnAppStoreReceipt: "only an App Store receipt names a history Apple keeps"
        }
    }
}
