import Dispatch
import Foundation
import Receipts
import ShopServer
import Synchronization

/// Every fuzz target, set up once over the fuzz PKI: verifiers that trust its roots, accept stubs and name
/// ``FuzzPKI/bundleId``; a Firebase verifier over its Google certificates with the clock pinned.
public final class FuzzHarness: Sendable {
    private let classicReceipt: ClassicReceiptFuzzer
    private let signedTransaction: SignedTransactionFuzzer
    private let notification: NotificationFuzzer
    private let stubReceipt: StubReceiptFuzzer
    private let firebaseToken: FirebaseTokenFuzzer
    private let formBody = FormBodyFuzzer()
    private let jsonBody = JSONBodyFuzzer()

    public init(pki: FuzzPKI) throws {
        func verifier(chainCache: Int = 32, stubSecret: String? = nil) throws -> ReceiptVerifier {
            try ReceiptVerifier(
                configuration: VerifierConfiguration(
                    bundleId: FuzzPKI.bundleId, rootCertificates: [pki.appStoreRoot],
                    receiptRootCertificates: [pki.receiptRoot], acceptsStubReceipts: true, stubSecret: stubSecret,
                    chainCacheCapacity: chainCache, now: { FuzzPKI.verifierNow }))
        }
        let shared = try verifier()
        let uncached = try verifier(chainCache: 0)
        classicReceipt = ClassicReceiptFuzzer(verifier: shared)
        signedTransaction = SignedTransactionFuzzer(cached: shared, uncached: uncached)
        notification = NotificationFuzzer(cached: shared, uncached: uncached)
        stubReceipt = StubReceiptFuzzer(unsigned: shared, signed: try verifier(stubSecret: FuzzPKI.stubSecret))
        let now = FuzzPKI.firebaseNow
        firebaseToken = FirebaseTokenFuzzer(
            verifier: try FirebaseTokenVerifier(
                projectId: FuzzPKI.firebaseProjectId, certificates: GoogleCertificateStore(pki.googleCertificates),
                now: { now }),
            now: now)
    }

    /// Feeds `bytes` to `target`. Traps when an invariant does not hold.
    @discardableResult
    public func run(_ target: FuzzTarget, _ bytes: [UInt8]) async -> FuzzOutcome {
        switch target {
        case .classicReceipt: await classicReceipt.run(bytes)
        case .signedTransaction: await signedTransaction.run(bytes)
        case .notification: await notification.run(bytes)
        case .stubReceipt: await stubReceipt.run(bytes)
        case .firebaseToken: firebaseToken.run(bytes)
        case .formBody: formBody.run(bytes)
        case .jsonBody: jsonBody.run(bytes)
        }
    }

    /// ``run(_:_:)`` from synchronous code (libFuzzer's callback): the verifiers are async (swift-certificates'
    /// chain validation is), so the input runs in a task while this thread waits. Never call it from a task.
    @discardableResult
    public func runBlocking(_ target: FuzzTarget, _ bytes: [UInt8]) -> FuzzOutcome {
        let box = OutcomeBox()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            let outcome = await self.run(target, bytes)
            box.outcome.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return box.outcome.withLock { $0 } ?? .refused("no_outcome")
    }
}

/// Hands a task's outcome to the waiting thread.
private final class OutcomeBox: Sendable {
    let outcome = Mutex<FuzzOutcome?>(nil)
}
