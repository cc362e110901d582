/// What a journal entry records: the purchase itself (always a transaction's first entry) or a later
/// change to it. A purchase's state is the kind of its latest entry (SQL `purchase_state_after`).
public enum JournalEntryKind: String, Sendable, Hashable, Codable, CaseIterable {
    case purchase
    case refund
    case refundReversal = "refund_reversal"
    case familyRevoke = "family_revoke"
}
