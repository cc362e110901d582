import Foundation
import Receipts

/// The appAccountToken every bench transaction carries: the ledger refuses a user's purchase whose
/// token differs from the one the user's earlier purchases carry, and the benches give
/// transactions to random users.
public let benchAccountToken = UUID(uuidString: "8e1b2c3d-0000-4000-8000-000000000001")!

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
        appAccountToken: benchAccountToken, evidenceSHA256: digest)
}
