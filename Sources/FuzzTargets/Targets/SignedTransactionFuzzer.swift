import Crypto
import Foundation
import Receipts

/// StoreKit 2 signed transactions (``JWSInput`` files). Invariants: a verifier that caches chains and
/// headers decides as one that validates every chain afresh; `prove` accepts only what `verifyTransaction`
/// accepts; what is accepted names this app, an accepted environment and product type, and carries the
/// JWS's hash as evidence.
struct SignedTransactionFuzzer: Sendable {
    let cached: ReceiptVerifier
    let uncached: ReceiptVerifier

    func run(_ bytes: [UInt8]) async -> FuzzOutcome {
        let jws = JWSInput.compact(bytes)
        let first = await result { () async throws(ReceiptRefusal) in try await cached.verifyTransaction(jws) }
        let fresh = await result { () async throws(ReceiptRefusal) in try await uncached.verifyTransaction(jws) }
        invariant(sameVerdict(first, fresh), "the chain cache changed the verdict: \(first) / \(fresh)")
        let proven = await result { () async throws(ReceiptRefusal) in
            try await cached.prove(receipt: jws, productId: nil)
        }
        if case .success(let transaction) = proven {
            invariant(first == .success(transaction), "prove accepted what verifyTransaction did not: \(first)")
        }

        switch first {
        case .failure(let refusal):
            return .refused(refusal.reason.rawValue)
        case .success(let transaction):
            let configuration = cached.configuration
            checkAccepted(transaction, configuration, checkProductType: true)
            let trimmed = jws.trimmingCharacters(in: .whitespacesAndNewlines)
            invariant(
                transaction.evidenceSHA256 == Array(SHA256.hash(data: Array(trimmed.utf8))),
                "the evidence is not the JWS's hash")
            return .accepted
        }
    }
}

/// Two verifications decided alike: the same transaction, or refusals for the same reason.
func sameVerdict<T: Equatable>(_ lhs: Result<T, ReceiptRefusal>, _ rhs: Result<T, ReceiptRefusal>) -> Bool {
    switch (lhs, rhs) {
    case (.success(let left), .success(let right)): left == right
    case (.failure(let left), .failure(let right)): left.reason == right.reason
    default: false
    }
}

/// What every App Store transaction the verifier accepts must say.
func checkAccepted(_ transaction: VerifiedTransaction, _ configuration: VerifierConfiguration, checkProductType: Bool) {
    invariant(transaction.store == .appStore, "an App Store transaction from store \(transaction.store)")
    invariant(transaction.bundleId == configuration.bundleId, "accepted another app's transaction")
    invariant(
        configuration.acceptedEnvironments.contains(transaction.environment),
        "accepted environment \(transaction.environment)")
    invariant(!transaction.transactionId.isEmpty && !transaction.productId.isEmpty, "an empty transaction id")
    if checkProductType {
        invariant(
            configuration.acceptedProductTypes.contains(transaction.productType),
            "accepted product type \(transaction.productType)")
    }
    invariant(
        (transaction.priceMilli == nil) == (transaction.currency == nil), "a price without a currency, or the reverse")
}
