import Crypto
import Foundation

/// Verifies stub notifications (see ``StubNotification``): format, HMAC signature when a secret is
/// configured, bundle id, environment `Stub`. The nested transaction is recorded with store `stub`, so a
/// stub notification can only ever touch purchases proven by stub receipts.
struct StubNotificationVerifier: Sendable {
    let configuration: VerifierConfiguration

    func verify(_ text: String) throws(ReceiptRefusal) -> VerifiedNotification {
        let (stub, signature) = try StubNotification.parse(text, maxBytes: configuration.maxInputBytes)
        let canonical = stub.canonicalText
        try StubText.checkSignature(
            signature, of: canonical, secret: configuration.stubSecret, what: "stub notification")
        guard stub.bundleId == configuration.bundleId else {
            throw ReceiptRefusal(.wrongBundleId, "bundle id is \(stub.bundleId), expected \(configuration.bundleId)")
        }
        guard stub.environment == .stub else {
            throw ReceiptRefusal(
                .wrongEnvironment, "a stub notification's environment is Stub, not \(stub.environment.rawValue)")
        }
        let signedDate = StubText.date(stub.signedDateMs)
        let evidence = Array(SHA256.hash(data: Array(canonical.utf8)))
        let transaction = stub.transaction.map { entry in
            let revoked = stub.notificationType == .refund || stub.notificationType == .revoke
            return VerifiedTransaction(
                store: .stub, environment: .stub, transactionId: entry.transactionId,
                originalTransactionId: entry.transactionId, bundleId: stub.bundleId, productId: entry.productId,
                productType: .nonConsumable, purchaseDate: signedDate, originalPurchaseDate: signedDate,
                signedDate: signedDate, ownershipType: entry.ownershipType,
                revocationDate: revoked ? signedDate : nil, revocationReason: entry.revocationReason,
                evidenceSHA256: evidence)
        }
        return VerifiedNotification(
            notificationType: stub.notificationType, subtype: stub.subtype, notificationUUID: stub.notificationUUID,
            signedDate: signedDate, environment: .stub, bundleId: stub.bundleId, appAppleId: nil,
            consumptionRequestReason: nil, transaction: transaction, evidenceSHA256: evidence)
    }
}
