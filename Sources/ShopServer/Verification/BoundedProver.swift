import Receipts

/// A ``PurchaseProver`` whose verifications run on a ``VerificationExecutor``: at most one per core at
/// once, off the threads that serve requests, each stopping at its next step once its request is over;
/// notifications in their own lane, behind purchases and on at most their share of the threads.
///
/// The request's deadline travels as task cancellation: the responder cancels a request's task at its
/// deadline, a job still queued then stops before its first step, and a running one at its next
/// (`ReceiptRefusal.cancelled`).
struct BoundedProver: PurchaseProver {
    let inner: any PurchaseProver
    private let purchases: VerificationExecutor.Lane
    private let notifications: VerificationExecutor.Lane

    init(inner: any PurchaseProver, executor: VerificationExecutor) {
        self.inner = inner
        purchases = executor.lane(.purchases)
        notifications = executor.lane(.notifications)
    }

    func prove(receipt: String, productId: String?) async throws(ReceiptRefusal) -> VerifiedTransaction {
        try await run(on: purchases) { () async throws(ReceiptRefusal) in
            try await inner.prove(receipt: receipt, productId: productId)
        }
    }

    func proveEach(receipt: String) async throws(ReceiptRefusal) -> [ProvenEntry] {
        try await run(on: purchases) { () async throws(ReceiptRefusal) in try await inner.proveEach(receipt: receipt) }
    }

    func verifyTransaction(_ jws: String) async throws(ReceiptRefusal) -> VerifiedTransaction {
        try await run(on: purchases) { () async throws(ReceiptRefusal) in try await inner.verifyTransaction(jws) }
    }

    func verifyNotification(_ signedPayload: String) async throws(ReceiptRefusal) -> VerifiedNotification {
        try await run(on: notifications) { () async throws(ReceiptRefusal) in
            try await inner.verifyNotification(signedPayload)
        }
    }

    private func run<T>(
        on lane: VerificationExecutor.Lane, _ verification: () async throws(ReceiptRefusal) -> T
    ) async throws(ReceiptRefusal) -> T {
        try await withTaskExecutorPreference(lane) { () async throws(ReceiptRefusal) -> T in
            if Task.isCancelled {
                throw ReceiptRefusal(.cancelled, "the verification was cancelled before it started")
            }
            return try await verification()
        }
    }
}
