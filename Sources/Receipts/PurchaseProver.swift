/// Proves purchases: turns what a client or the App Store sends into a ``VerifiedTransaction``, or refuses
/// it with a ``ReceiptRefusal``.
///
/// Implementations do no I/O (no network, no database) and are safe to share between tasks.
/// ``ReceiptVerifier`` is the implementation; tests of other modules may supply their own.
public protocol PurchaseProver: Sendable {
    /// Proves a purchase from the SeSAC `receipt` form field, which may hold a stub receipt, a StoreKit 2
    /// signed transaction (JWS) or a classic base64 app receipt.
    ///
    /// - Parameter productId: the product the client claims to have bought. For a receipt with several
    ///   in-app entries it selects the entry; when given, the proven product must equal it
    ///   (`product_not_in_receipt` otherwise).
    func prove(receipt: String, productId: String?) async throws(ReceiptRefusal) -> VerifiedTransaction

    /// Proves every purchase a receipt holds: each in-app entry of a classic app receipt, each with its own
    /// verdict (an entry of a product type the shop does not sell is refused on its own), or the single
    /// purchase of a stub receipt or signed transaction. Throws when the receipt itself is refused.
    func proveEach(receipt: String) async throws(ReceiptRefusal) -> [ProvenEntry]

    /// Verifies a StoreKit 2 signed transaction (JWS compact serialization).
    func verifyTransaction(_ jws: String) async throws(ReceiptRefusal) -> VerifiedTransaction

    /// Verifies an App Store Server Notification V2 `signedPayload`, including its nested signed transaction.
    func verifyNotification(_ signedPayload: String) async throws(ReceiptRefusal) -> VerifiedNotification
}

extension PurchaseProver {
    /// For provers whose receipts hold one purchase each.
    public func proveEach(receipt: String) async throws(ReceiptRefusal) -> [ProvenEntry] {
        [ProvenEntry(transaction: try await prove(receipt: receipt, productId: nil))]
    }
}
