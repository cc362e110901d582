import Crypto
import Foundation
import Receipts

/// Stub receipts and stub notifications (text), each through a verifier that accepts unsigned stubs and one
/// that wants them signed with ``FuzzPKI/stubSecret``. Invariants: what the signing verifier accepts, the
/// other accepts alike; what is accepted is a stub of this app; and its evidence is the hash of the
/// canonical text rendered back from what was accepted (everything a stub says is covered).
struct StubReceiptFuzzer: Sendable {
    let unsigned: ReceiptVerifier
    let signed: ReceiptVerifier

    func run(_ bytes: [UInt8]) async -> FuzzOutcome {
        let text = String(decoding: bytes, as: UTF8.self)
        let receipt = await checkReceipt(text)
        let notification = await checkNotification(text)
        switch (receipt, notification) {
        case (.accepted, _), (_, .accepted): return .accepted
        case (.refused(let code), .refused(let other)):
            return .refused(ReceiptField(classifying: text) == .stubReceipt ? code : other)
        }
    }

    private func checkReceipt(_ text: String) async -> FuzzOutcome {
        let open = await result { () async throws(ReceiptRefusal) in try await unsigned.proveEach(receipt: text) }
        let strict = await result { () async throws(ReceiptRefusal) in try await signed.proveEach(receipt: text) }
        if case .success(let entries) = strict {
            invariant(open == .success(entries), "a signed stub the unsigned verifier refused: \(open)")
        }
        guard case .success(let entries) = open, ReceiptField(classifying: text) == .stubReceipt else {
            if case .failure(let refusal) = open { return .refused(refusal.reason.rawValue) }
            return .refused("not_a_stub")
        }
        invariant(entries.count == 1, "a stub proved \(entries.count) purchases")
        let transaction = entries[0].transaction
        let configuration = unsigned.configuration
        invariant(transaction.store == .stub && transaction.environment == .stub, "a stub proved an App Store purchase")
        invariant(transaction.bundleId == configuration.bundleId, "accepted another app's stub")
        invariant(configuration.acceptedProductTypes.contains(transaction.productType), "accepted a product type")

        let named = await result { () async throws(ReceiptRefusal) in
            try await unsigned.prove(receipt: text, productId: transaction.productId)
        }
        invariant(named == .success(transaction), "naming the product proved another purchase: \(named)")

        if let canonical = Self.canonicalReceipt(transaction) {
            invariant(
                transaction.evidenceSHA256 == Array(SHA256.hash(data: Array(canonical.utf8))),
                "the evidence is not the hash of the canonical text of what was accepted:\n\(canonical)")
        }
        return .accepted
    }

    private func checkNotification(_ text: String) async -> FuzzOutcome {
        let open = await result { () async throws(ReceiptRefusal) in try await unsigned.verifyNotification(text) }
        let strict = await result { () async throws(ReceiptRefusal) in try await signed.verifyNotification(text) }
        if case .success(let notification) = strict {
            invariant(open == .success(notification), "a signed stub notification the other refused: \(open)")
        }
        guard case .success(let notification) = open, notification.environment == .stub else {
            if case .failure(let refusal) = open { return .refused(refusal.reason.rawValue) }
            return .refused("not_a_stub")
        }
        invariant(notification.bundleId == unsigned.configuration.bundleId, "accepted another app's notification")
        if let transaction = notification.transaction {
            invariant(transaction.store == .stub, "a stub notification touched an App Store transaction")
        }
        if let canonical = Self.canonicalNotification(notification) {
            invariant(
                notification.evidenceSHA256 == Array(SHA256.hash(data: Array(canonical.utf8))),
                "the evidence is not the hash of the canonical text of what was accepted:\n\(canonical)")
        }
        return .accepted
    }

    /// Milliseconds back from a date made of them, exact below 10^13 (the year 2286); nil beyond, where a
    /// `Double` of seconds since 1970 no longer holds every millisecond.
    static func milliseconds(_ date: Date) -> Int64? {
        let value = (date.timeIntervalSince1970 * 1000).rounded()
        guard value >= 0, value < 1e13 else { return nil }
        return Int64(value)
    }

    /// The stub receipt that proves exactly `transaction`, as canonical text.
    static func canonicalReceipt(_ transaction: VerifiedTransaction) -> String? {
        guard let created = milliseconds(transaction.signedDate), let bought = milliseconds(transaction.purchaseDate),
            let first = milliseconds(transaction.originalPurchaseDate)
        else { return nil }
        let entry = StubReceipt.InAppEntry(
            productId: transaction.productId, transactionId: transaction.transactionId,
            originalTransactionId: transaction.originalTransactionId, purchaseDateMs: bought,
            originalPurchaseDateMs: first, productType: transaction.productType,
            ownershipType: transaction.ownershipType, priceMilli: transaction.priceMilli,
            currency: transaction.currency, appAccountToken: transaction.appAccountToken)
        return StubReceipt(bundleId: transaction.bundleId, creationDateMs: created, inApp: [entry]).canonicalText
    }

    /// The stub notification that says exactly `notification`, as canonical text.
    static func canonicalNotification(_ notification: VerifiedNotification) -> String? {
        guard let signed = milliseconds(notification.signedDate) else { return nil }
        let transaction = notification.transaction.map {
            StubNotification.Transaction(
                transactionId: $0.transactionId, productId: $0.productId, ownershipType: $0.ownershipType,
                revocationReason: $0.revocationReason)
        }
        return StubNotification(
            bundleId: notification.bundleId, notificationType: notification.notificationType,
            subtype: notification.subtype, notificationUUID: notification.notificationUUID, signedDateMs: signed,
            transaction: transaction
        ).canonicalText
    }
}
