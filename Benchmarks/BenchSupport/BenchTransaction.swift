import Foundation
import Receipts

/// A verified App Store transaction as `LedgerStore.recordPurchase` receives it after verification:
/// production, priced in KRW, with a digest standing in for the evidence's SHA-256.
public func benchTransaction(_ id: String, product: String) -> VerifiedTransaction {
    let date = Date()
    var digest = [UInt8](repeating: 0, count: 32)
    for (index, byte) in id.utf8.enumerated() { digest[index % 32] ^= byte &+ UInt8(truncatingIfNeeded: index) }
    return VerifiedTransaction(
        store: .appStore, environment: .production, transactionId: id, originalTransactionId: id,
        bundleId: "com.memolease.sesac1", productId: product, productType: .nonConsumable, purchaseDate: date,
        originalPurchaseDate: date, signedDate: date, priceMilli: 2_500_000, currency: "KRW", storefront: "KOR",
        appAccountToken: UUID(), evidenceSHA256: digest)
}
