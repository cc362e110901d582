/// One purchase of a receipt as ``PurchaseProver/proveEach(receipt:)`` judged it: authentic (its
/// receipt verified), and either accepted or refused on its own (a product type the shop does not
/// sell), so that callers can name the refused entry.
public struct ProvenEntry: Sendable, Hashable {
    /// The entry as the verified receipt states it.
    public var transaction: VerifiedTransaction
    /// Why this entry is not accepted as a purchase; nil when it is.
    public var refusal: ReceiptRefusal?

    public init(transaction: VerifiedTransaction, refusal: ReceiptRefusal? = nil) {
        self.transaction = transaction
        self.refusal = refusal
    }

    /// The transaction, when the entry is accepted.
    public var accepted: VerifiedTransaction? { refusal == nil ? transaction : nil }
}
