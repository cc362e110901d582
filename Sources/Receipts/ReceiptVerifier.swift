import Foundation

/// The purchase prover: verifies stub receipts, StoreKit 2 signed transactions, classic app receipts and
/// App Store Server Notifications V2 according to a ``VerifierConfiguration``. No I/O; share one instance (it holds the
/// verified-chain cache).
public struct ReceiptVerifier: PurchaseProver {
    public let configuration: VerifierConfiguration
    private let appStore: AppStoreVerifier
    private let appReceipts: AppReceiptVerifier
    private let stubs: StubReceiptVerifier
    private let stubNotifications: StubNotificationVerifier

    public init(configuration: VerifierConfiguration) throws(ReceiptsConfigurationError) {
        guard !configuration.bundleId.isEmpty else { throw ReceiptsConfigurationError("bundle id is empty") }
        guard !configuration.rootCertificates.isEmpty else {
            throw ReceiptsConfigurationError("no root certificates are configured")
        }
        guard !configuration.receiptRootCertificates.isEmpty else {
            throw ReceiptsConfigurationError("no receipt root certificates are configured")
        }
        guard configuration.maxInputBytes > 0 else {
            throw ReceiptsConfigurationError("maxInputBytes must be positive")
        }
        if let secret = configuration.stubSecret, secret.isEmpty {
            throw ReceiptsConfigurationError("the stub secret is empty; leave it unset instead")
        }
        self.configuration = configuration
        self.appStore = AppStoreVerifier(configuration: configuration)
        self.appReceipts = AppReceiptVerifier(configuration: configuration)
        self.stubs = StubReceiptVerifier(configuration: configuration)
        self.stubNotifications = StubNotificationVerifier(configuration: configuration)
    }

    public func prove(receipt: String, productId: String?) async throws(ReceiptRefusal) -> VerifiedTransaction {
        let field = ReceiptField(classifying: receipt)
        guard receipt.utf8.count <= configuration.maxInputBytes else {
            throw ReceiptRefusal(
                field == .appReceipt ? .malformedReceipt : .malformed,
                "receipt is \(receipt.utf8.count) bytes, over the \(configuration.maxInputBytes)-byte limit")
        }
        switch field {
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
        case .appReceipt:
            let verified = try await appReceipts.verify(receipt)
            let transaction: VerifiedTransaction
            if let productId {
                guard let entry = verified.transaction(for: productId) else {
                    throw ReceiptRefusal(
                        .productNotInReceipt,
                        "the receipt's \(verified.transactions.count) in-app purchases do not include \(productId.prefix(128))"
                    )
                }
                transaction = entry
            } else {
                guard verified.transactions.count == 1, let only = verified.transactions.first else {
                    throw ReceiptRefusal(
                        .productNotInReceipt,
                        "the receipt holds \(verified.transactions.count) in-app purchases; name the product")
                }
                transaction = only
            }
            try checkProductType(transaction)
            return transaction
        case .unrecognised:
            throw ReceiptRefusal(
                .malformed, "receipt is neither a stub receipt, a StoreKit 2 signed transaction nor an app receipt")
        }
    }

    /// Every purchase a receipt proves: each in-app entry of a classic app receipt (none when it holds no
    /// purchase), or the one purchase of a stub receipt or signed transaction.
    public func proveEach(receipt: String) async throws(ReceiptRefusal) -> [ProvenEntry] {
        guard ReceiptField(classifying: receipt) == .appReceipt else {
            return [ProvenEntry(transaction: try await prove(receipt: receipt, productId: nil))]
        }
        guard receipt.utf8.count <= configuration.maxInputBytes else {
            throw ReceiptRefusal(
                .malformedReceipt,
                "receipt is \(receipt.utf8.count) bytes, over the \(configuration.maxInputBytes)-byte limit")
        }
        return try await appReceipts.verify(receipt).transactions.map { transaction in
            do throws(ReceiptRefusal) {
                try checkProductType(transaction)
                return ProvenEntry(transaction: transaction)
            } catch {
                return ProvenEntry(transaction: transaction, refusal: error)
            }
        }
    }

    /// Verifies a classic app receipt: signature, chain, bundle id and environment; every entry included.
    public func verifyAppReceipt(_ receipt: String) async throws(ReceiptRefusal) -> VerifiedAppReceipt {
        try await appReceipts.verify(receipt)
    }

    private func checkProductType(_ transaction: VerifiedTransaction) throws(ReceiptRefusal) {
        guard configuration.acceptedProductTypes.contains(transaction.productType) else {
            throw ReceiptRefusal(
                .unsupportedProductType,
                "\(transaction.productId.prefix(128)) is a \(transaction.productType.rawValue) product; accepted: "
                    + configuration.acceptedProductTypes.map(\.rawValue).sorted().joined(separator: ", "))
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

    /// How many parsed JWS headers are cached now (for tests).
    public var cachedHeaderCount: Int { appStore.headers.count }
}
