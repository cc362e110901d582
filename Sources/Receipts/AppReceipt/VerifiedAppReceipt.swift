/// A classic receipt whose signature and chain verified and whose bundle id and environment are accepted,
/// with each of its in-app entries as a ``VerifiedTransaction`` (unpriced: receipts carry no price).
public struct VerifiedAppReceipt: Sendable, Hashable {
    public var receipt: AppReceipt
    /// One per in-app entry, in receipt order.
    public var transactions: [VerifiedTransaction]
    /// SHA-256 of the receipt's bytes (the decoded base64), 32 bytes; every transaction carries it as its
    /// evidence.
    public var evidenceSHA256: [UInt8]

    /// The entry for `productId`: when the receipt lists the product more than once (bought, refunded,
    /// bought again), the entry not cancelled, then the latest purchase.
    public func transaction(for productId: String) -> VerifiedTransaction? {
        transactions.filter { $0.productId == productId }
            .max { lhs, rhs in
                let lhsLive = lhs.revocationDate == nil
                let rhsLive = rhs.revocationDate == nil
                if lhsLive != rhsLive { return !lhsLive }
                return lhs.purchaseDate < rhs.purchaseDate
            }
    }
}
