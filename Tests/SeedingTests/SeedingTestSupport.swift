import CivilDates
import Foundation
import Ledger
import Postgres
import Receipts
import Reports
import TestSupport
import Testing

/// Runs `body` on a database of its own, then runs every reconciliation check (the ledger's, and the
/// reports' totals and day cache, which the seeder's catch-up fills).
func withSeedingDatabase<R: Sendable>(
    _ label: String = #function,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (TestDatabase, LedgerStore) async throws -> R
) async throws -> R {
    try await withReconciledLedger(
        label, checks: ReconciliationChecks.all, sourceLocation: sourceLocation, body)
}

func date(_ text: String) -> CalendarDate { CalendarDate(text)! }

let testProfile = try! UserProfile(json: #"{"nick":"새싹"}"#)

/// A verified App Store purchase of `item`, in KRW.
func purchase(_ id: String, item: ItemID, at date: Date, price: Int64) -> VerifiedTransaction {
    VerifiedTransaction(
        store: .appStore, environment: .production, transactionId: id, originalTransactionId: id,
        bundleId: "com.memolease.sesac1", productId: productId(item), productType: .nonConsumable,
        purchaseDate: date, originalPurchaseDate: date, signedDate: date.addingTimeInterval(2), priceMilli: price,
        currency: "KRW", storefront: "KOR", ownershipType: .purchased, appAccountToken: nil,
        evidenceSHA256: fakeDigest("appStore/production/\(id)"))
}
