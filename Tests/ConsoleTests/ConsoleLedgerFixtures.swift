import Foundation
import Ledger
import Receipts
import TestSupport

/// A verified App Store purchase as the Receipts module hands it to the ledger (the reports' tests'
/// fixture, for the console's seeded ledgers).
func consolePurchase(
    _ id: String, item: ItemID, at date: Date, price: Int64?, currency: String = "KRW", storefront: String = "KOR"
) -> VerifiedTransaction {
    VerifiedTransaction(
        store: .appStore, environment: .production, transactionId: id, originalTransactionId: id,
        bundleId: "com.memolease.sesac1", productId: productId(item), productType: .nonConsumable,
        purchaseDate: date, originalPurchaseDate: date, signedDate: date.addingTimeInterval(2), priceMilli: price,
        currency: price == nil ? nil : currency, storefront: storefront, ownershipType: .purchased,
        appAccountToken: nil,
        evidenceSHA256: fakeDigest("console/\(id)"))
}

let consoleProfile = try! UserProfile(json: #"{"nick":"새싹"}"#)

/// Registers `uid` (if new) and records its purchase of `item` at `at`.
func recordConsolePurchase(
    _ ledger: LedgerStore, _ uid: String, _ id: String, item: ItemID, at: String, price: Int64? = 2_500_000
) async throws {
    _ = try await ledger.register(uid: uid, profile: consoleProfile)
    _ = try await ledger.recordPurchase(consolePurchase(id, item: item, at: instant(at), price: price), for: uid)
}
