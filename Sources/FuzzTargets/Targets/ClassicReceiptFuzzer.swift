import Crypto
import Foundation
import Receipts

/// Classic app receipts. A corpus file is the DER/BER PKCS#7 container; the harness posts its base64 as a
/// client would. Invariants: `verifyAppReceipt` and `proveEach` agree; what is accepted names this app, an
/// accepted environment, says what the unverified reading says, and carries the receipt's hash as evidence.
struct ClassicReceiptFuzzer: Sendable {
    let verifier: ReceiptVerifier

    func run(_ bytes: [UInt8]) async -> FuzzOutcome {
        let receipt = Data(bytes).base64EncodedString()
        let unverified = AppReceipt(unverifiedBase64: receipt)
        let isAppReceipt = ReceiptField(classifying: receipt) == .appReceipt
        let each = await result { () async throws(ReceiptRefusal) in try await verifier.proveEach(receipt: receipt) }

        let verified: VerifiedAppReceipt
        do {
            verified = try await verifier.verifyAppReceipt(receipt)
        } catch {
            switch each {
            case .success:
                invariant(false, "proveEach accepted a receipt verifyAppReceipt refused (\(error))")
            case .failure(let refusal):
                invariant(
                    refusal.reason == (isAppReceipt ? error.reason : .malformed),
                    "proveEach refused with \(refusal.reason), verifyAppReceipt with \(error.reason)")
            }
            return .refused(error.reason.rawValue)
        }

        let configuration = verifier.configuration
        invariant(isAppReceipt, "an accepted receipt must classify as an app receipt")
        invariant(verified.receipt.bundleId == configuration.bundleId, "accepted another app's receipt")
        invariant(
            configuration.acceptedEnvironments.contains(verified.receipt.environment),
            "accepted environment \(verified.receipt.environment)")
        invariant(unverified == verified.receipt, "the unverified reading differs from the verified one")
        invariant(verified.evidenceSHA256 == Array(SHA256.hash(data: bytes)), "the evidence is not the receipt's hash")
        invariant(verified.transactions.count == verified.receipt.purchases.count, "an in-app entry went missing")
        for (transaction, purchase) in zip(verified.transactions, verified.receipt.purchases) {
            invariant(transaction.bundleId == configuration.bundleId, "a transaction names another app")
            invariant(transaction.productId == purchase.productId, "a transaction names another product")
            invariant(transaction.evidenceSHA256 == verified.evidenceSHA256, "a transaction has other evidence")
        }

        guard case .success(let entries) = each else {
            invariant(false, "proveEach refused a receipt verifyAppReceipt accepted: \(each)")
            return .accepted
        }
        invariant(entries.map(\.transaction) == verified.transactions, "proveEach proved other entries")
        for entry in entries where entry.refusal == nil {
            invariant(
                configuration.acceptedProductTypes.contains(entry.transaction.productType),
                "proveEach accepted a \(entry.transaction.productType) entry")
        }
        if let productId = verified.transactions.first?.productId {
            let proven = await result { () async throws(ReceiptRefusal) in
                try await verifier.prove(receipt: receipt, productId: productId)
            }
            if case .success(let transaction) = proven {
                invariant(transaction == verified.transaction(for: productId), "prove chose another entry")
            }
        }
        return .accepted
    }
}

/// The result of a verification, refusals included.
func result<T>(_ body: () async throws(ReceiptRefusal) -> T) async -> Result<T, ReceiptRefusal> {
    do {
        return .success(try await body())
    } catch {
        return .failure(error)
    }
}
