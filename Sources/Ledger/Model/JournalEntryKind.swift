/// What a journal entry records: the purchase itself (always a transaction's first entry) or a later
/// change to it. A purchase's state is the kind of its latest entry that has one (SQL
/// `purchase_state_after`); a `priceLearned` entry has none and leaves the state as it was.
public enum JournalEntryKind: String, Sendable, Hashable, Codable, CaseIterable {
    case purchase
    case refund
    case refundReversal = "refund_reversal"
    case familyRevoke = "family_revoke"
    /// The store's signed price of a purchase recorded without one, learned later (migration 0008).
    case priceLearned = "price_learned"
}
