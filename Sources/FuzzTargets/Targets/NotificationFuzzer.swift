import Crypto
import Foundation
import Receipts

/// App Store Server Notifications V2 (``JWSInput`` files). Invariants: the chain cache does not change the
/// verdict; what is accepted names this app and an accepted environment, and so does its nested transaction.
struct NotificationFuzzer: Sendable {
    let cached: ReceiptVerifier
    let uncached: ReceiptVerifier

    func run(_ bytes: [UInt8]) async -> FuzzOutcome {
        let payload = JWSInput.compact(bytes)
        let first = await result { () async throws(ReceiptRefusal) in try await cached.verifyNotification(payload) }
        let fresh = await result { () async throws(ReceiptRefusal) in try await uncached.verifyNotification(payload) }
        invariant(sameVerdict(first, fresh), "the chain cache changed the verdict: \(first) / \(fresh)")

        switch first {
        case .failure(let refusal):
            return .refused(refusal.reason.rawValue)
        case .success(let notification):
            let configuration = cached.configuration
            invariant(notification.bundleId == configuration.bundleId, "accepted another app's notification")
            invariant(
                configuration.acceptedEnvironments.contains(notification.environment)
                    || notification.environment == .stub,
                "accepted environment \(notification.environment)")
            invariant(!notification.notificationUUID.isEmpty, "a notification without a UUID")
            if let transaction = notification.transaction {
                invariant(transaction.environment == notification.environment, "a transaction of another environment")
                if notification.environment == .stub {
                    invariant(transaction.store == .stub, "a stub notification touched an App Store transaction")
                } else {
                    checkAccepted(transaction, configuration, checkProductType: false)
                }
            }
            let trimmed = payload.trimmingCharacters(in: .whitespacesAndNewlines)
            if notification.environment != .stub {
                invariant(
                    notification.evidenceSHA256 == Array(SHA256.hash(data: Array(trimmed.utf8))),
                    "the evidence is not the payload's hash")
            }
            return .accepted
        }
    }
}
