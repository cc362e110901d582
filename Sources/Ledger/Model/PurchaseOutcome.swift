/// The result of `LedgerStore.recordPurchase(_:for:)`.
public enum PurchaseOutcome: Sendable, Hashable {
    /// New: the purchase, its journal entry and its grant were written (and any refund events that
    /// arrived before it were applied: see `Purchase.state`).
    case recorded(Purchase)
    /// The same user posted the same evidence before: the stored purchase, nothing written.
    case duplicate(Purchase)
    /// Refused, nothing written: the transaction is recorded for another user, or with other evidence.
    case conflict(PurchaseConflict)

    /// The purchase for `recorded` and `duplicate`.
    public var purchase: Purchase? {
        switch self {
        case .recorded(let purchase), .duplicate(let purchase): purchase
        case .conflict: nil
        }
    }
}

/// Why a transaction could not be recorded for this user.
public enum PurchaseConflict: String, Sendable, Hashable, Codable {
    /// Another user recorded this transaction first.
    case ownedByAnotherUser = "transaction_owned_by_another_user"
    /// This user recorded the transaction id before, with different evidence.
    case differentEvidence = "transaction_evidence_differs"
}
