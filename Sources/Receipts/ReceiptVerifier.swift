import Foundation

/// The purchase prover: verifies stub receipts, StoreKit 2 signed transactions and App Store Server
/// Notifications V2 according to a ``VerifierConfiguration``. No I/O; share one instance (it holds the
/// verified-chain cache).
public struct ReceiptVerifier: PurchaseProver {
    public let configuration: VerifierConfiguration
    private let appStore: AppStoreVerifier
    private let stubs: StubReceiptVerifier
    private let stubNotifications: StubNotificationVerifier

    public init(configuration: VerifierConfiguration) throws(ReceiptsConfigurationError) {
        guard !configuration.bundleId.isEmpty else { throw ReceiptsConfigurationError("bundle id is empty") }
        guard !configuration.rootCertificates.isEmpty else {
            throw ReceiptsConfigurationError("no root certificates are configured")
        }
        guard configuration.maxInputBytes > 0 else {
            throw ReceiptsConfigurationError("maxInputBytes must be positive")
        }
        if let secret = configuration.stubSecret, secret.isEmpty {
            throw ReceiptsConfigurationError("the stub secret is empty; leave it unset instead")
        }
        self.configuration = configuration
        self.appStore = AppStoreVerifier(configuration: configuration)
        self.stubs = StubReceiptVerifier(configuration: configuration)
        self.stubNotifications = StubNotificationVerifier(configuration: configuration)
    }

    public func prove(receipt: String, productId: String?) async throws(ReceiptRefusal) -> VerifiedTransaction {
        guard receipt.utf8.count <= configuration.maxInputBytes else {
            throw ReceiptRefusal(
                .malformed, "receipt is \(receipt.utf8.count) bytes, over the \(configuration.maxInputBytes)-byte limit"
            )
        }
        switch ReceiptField(classifying: receipt) {
        case .stubReceipt:
            guard configuration.acceptsStubReceipts else {
                throw ReceiptRefusal(.stubNotAccepted, "stub receipts are not accepted by this server")
            }
            return try stubs.prove(receipt, productId: productId)
        case .signedTransaction:
            let transaction = try await appStore.verifyTransaction(receipt)
            if let productId, transaction.productId != productId {
                throw ReceiptRefusal(
                    .productNotInReceipt, "the signed transaction is for \(transaction.productId), not \(productId)")
            }
            return transaction
        case .legacyAppReceipt:
            throw ReceiptRefusal(
                .legacyReceiptUnsupported,
                "classic app receipts (base64 PKCS#7) are not supported; send the StoreKit 2 signed transaction")
        case .unrecognised:
            throw ReceiptRefusal(
                .malformed, "receipt is neither a stub receipt, a StoreKit 2 signed transaction nor an app receipt")
        }
    }

    public func verifyTransaction(_ jws: String) async throws(ReceiptRefusal) -> VerifiedTransaction {
        try await appStore.verifyTransaction(jws)
    }

    /// Verifies an App Store Server Notification V2 `signedPayload`, or a stub notification when stubs are
    /// accepted (`STUB-RECEIPTS.md`).
    public func verifyNotification(_ signedPayload: String) async throws(ReceiptRefusal) -> VerifiedNotification {
        // Told apart as receipts are (`ReceiptField`): surrounding whitespace does not count.
        if Array(signedPayload.utf8).trimmingASCIIWhitespace().starts(with: StubNotification.magicLine.utf8) {
            guard configuration.acceptsStubReceipts else {
                throw ReceiptRefusal(.stubNotAccepted, "stub notifications are not accepted by this server")
            }
            return try stubNotifications.verify(signedPayload)
        }
        return try await appStore.verifyNotification(signedPayload)
    }

    /// How many verified certificate chains are cached now (for metrics and tests).
    public var cachedChainCount: Int { appStore.chains.cachedChains }
}
