import Foundation
import FuzzTargets
import Receipts

/// Stub receipts and stub notifications, signed with the harness's stub secret or unsigned.
enum StubSeeds {
    static func entry(
        _ productId: String = SeedDates.face, _ transactionId: String = "stub-1"
    ) -> StubReceipt.InAppEntry {
        StubReceipt.InAppEntry(productId: productId, transactionId: transactionId, purchaseDateMs: SeedDates.purchaseMs)
    }

    static func receipt(_ entries: [StubReceipt.InAppEntry]) -> StubReceipt {
        StubReceipt(bundleId: SeedDates.bundleId, creationDateMs: SeedDates.signedMs, inApp: entries)
    }

    static func seeds() -> [String: [UInt8]] {
        let priced = StubReceipt.InAppEntry(
            productId: SeedDates.background, transactionId: "stub-2", originalTransactionId: "stub-0",
            purchaseDateMs: SeedDates.purchaseMs, originalPurchaseDateMs: SeedDates.originalPurchaseMs,
            ownershipType: .familyShared, priceMilli: 2_500_000, currency: "KRW",
            appAccountToken: UUID(uuidString: "7e3fb20b-4cdb-47cc-936d-99d65f608138"))
        let refund = StubNotification(
            bundleId: SeedDates.bundleId, notificationType: .refund, notificationUUID: "stub-n-1",
            signedDateMs: SeedDates.signedMs,
            transaction: .init(transactionId: "stub-1", productId: SeedDates.face, revocationReason: 1))
        let test = StubNotification(
            bundleId: SeedDates.bundleId, notificationType: .test, subtype: "SUMMARY", notificationUUID: "stub-n-2",
            signedDateMs: SeedDates.signedMs, transaction: nil)
        let signed = receipt([entry()]).text(signedWith: FuzzPKI.stubSecret)
        let texts: [String: String] = [
            "valid-receipt-unsigned": receipt([entry()]).text(signedWith: nil),
            "valid-receipt-signed": signed,
            "valid-receipt-priced": receipt([priced]).text(signedWith: FuzzPKI.stubSecret),
            "valid-receipt-crlf": signed.replacingOccurrences(of: "\n", with: "\r\n"),
            "valid-receipt-indented": "  " + signed.replacingOccurrences(of: "\n", with: "\n\n   "),
            "valid-notification-refund": refund.text(signedWith: FuzzPKI.stubSecret),
            "valid-notification-test": test.text(signedWith: nil),
            "refused-two-entries": receipt([entry(), entry(SeedDates.background, "stub-3")]).text(signedWith: nil),
            "refused-unknown-key": signed.replacingOccurrences(of: "in_app:", with: "colour: green\nin_app:"),
            "refused-other-bundle": StubReceipt(
                bundleId: "com.example.other", creationDateMs: SeedDates.signedMs, inApp: [entry()]
            ).text(signedWith: nil),
        ]
        return texts.mapValues { Array($0.utf8) }
    }
}
