import Receipts

/// A ``PurchaseProver`` whose verifications run on a ``VerificationExecutor``: at most one per core at
/// once, off the threads that serve requests, each stopping at its next step once its request is over.
///
/// The request's deadline travels as task cancellation: the responder cancels a request's task at its
/// deadline, a job still queued then stops before its first step, and a running one at its next
/// (`ReceiptRefusal.cancelled`).
struct BoundedProver: PurchaseProver {
    let inner: any PurchaseProver
    let executor: VerificationExecutor

    func prove(receipt: String, productId: String?) async throws(ReceiptRefusal) -> VerifiedTransaction {
        try await run { () async throws(ReceiptRefusal) in try await inner.prove(receipt: receipt, productId: productId)
        }
    }

    func proveEach(receipt: String) async throws(ReceiptRefusal) -> [ProvenEntry] {
        try await run { () async throws(ReceiptRefusal) in try await inner.proveEach(receipt: receipt) }
    }

    func verifyTransaction(_ jws: String) async throws(ReceiptRefusal) -> VerifiedTransaction {
        try await run { () async throws(ReceiptRefusal) in try await inner.verifyTransaction(jws) }
    }

    func verifyNotification(_ signedPayload: String) async throws(ReceiptRefusal) -> VerifiedNotification {
        try await run { () async throws(ReceiptRefusal) in try await inner.verifyNotification(signedPayload) }
    }

    private func run<T>(_ verification: () async throws(ReceiptRefusal) -> T) async throws(ReceiptRefusal) -> T {
        try await withTaskExecutorPreference(executor) { () async throws(ReceiptRefusal) -> T in
            if Task.isCancelled {
                throw ReceiptRefusal(.cancelled, "the verification was cancelled before it started")
            }
            return try await verification()
        }
    }
}
