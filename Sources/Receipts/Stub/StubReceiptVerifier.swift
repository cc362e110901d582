import Crypto
import Foundation

/// Verifies stub receipts (see ``StubReceipt``) against the configuration: format, HMAC signature when a
/// secret is configured, bundle id, environment `Stub`, then the entry for the requested product.
struct StubReceiptVerifier: Sendable {
    let configuration: VerifierConfiguration

    func prove(_ text: String, productId: String?) throws(ReceiptRefusal) -> VerifiedTransaction {
        let (receipt, signature) = try StubReceipt.parse(text, maxBytes: configuration.maxInputBytes)
        let canonical = receipt.canonicalText
        try StubText.checkSignature(signature, of: canonical, secret: configuration.stubSecret, what: "stub receipt")
        guard receipt.bundleId == configuration.bundleId else {
            throw ReceiptRefusal(.wrongBundleId, "bundle id is \(receipt.bundleId), expected \(configuration.bundleId)")
        }
        guard receipt.environment == .stub else {
            throw ReceiptRefusal(
                .wrongEnvironment, "a stub receipt's environment is Stub, not \(receipt.environment.rawValue)")
        }

        let entry = try select(from: receipt.inApp, productId: productId)
        guard configuration.acceptedProductTypes.contains(entry.productType) else {
            throw ReceiptRefusal(.unsupportedProductType, "product type \(entry.productType.rawValue) is not accepted")
        }
        guard entry.ownershipType == .purchased || entry.ownershipType == .familyShared else {
            throw ReceiptRefusal(.malformed, "unknown in_app_ownership_type \(entry.ownershipType.rawValue)")
        }
        return VerifiedTransaction(
            store: .stub,
            environment: .stub,
            transactionId: entry.transactionId,
            originalTransactionId: entry.originalTransactionId,
            bundleId: receipt.bundleId,
            productId: entry.productId,
            productType: entry.productType,
            purchaseDate: StubText.date(entry.purchaseDateMs),
            originalPurchaseDate: StubText.date(entry.originalPurchaseDateMs),
            signedDate: StubText.date(receipt.creationDateMs),
            priceMilli: entry.priceMilli,
            currency: entry.currency,
            storefront: nil,
            ownershipType: entry.ownershipType,
            appAccountToken: entry.appAccountToken,
            evidenceSHA256: Array(SHA256.hash(data: Array(canonical.utf8))))
    }

    /// The entry for `productId` (the latest purchase if several), or the only entry when no product is named.
    private func select(
        from entries: [StubReceipt.InAppEntry], productId: String?
    ) throws(ReceiptRefusal)
        -> StubReceipt.InAppEntry
    {
        guard let productId else {
            guard entries.count == 1, let only = entries.first else {
                throw ReceiptRefusal(
                    .productNotInReceipt, "stub receipt has \(entries.count) in_app entries; name the product to prove")
            }
            return only
        }
        guard
            let entry = entries.filter({ $0.productId == productId }).max(by: { $0.purchaseDateMs < $1.purchaseDateMs })
        else { throw ReceiptRefusal(.productNotInReceipt, "stub receipt has no in_app entry for \(productId)") }
        return entry
    }
}
