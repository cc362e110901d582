import Crypto
import Foundation

/// Verifies App Store signed data offline: StoreKit 2 transactions and Server Notifications V2.
///
/// Order of checks: shape and size, `alg` = ES256, the payload's `signedDate` in ``SignedDateWindow``, the
/// ES256 signature with the leaf's key, the `x5c` chain at that `signedDate` (the signature comes first,
/// unlike Apple's `SignedDataVerifier`, so that a forgery costs one signature check, not a chain); only
/// then anything else the payload says (bundle id, environment, product type, its other dates). Nothing
/// from the payload but `signedDate`, range-checked, is used before the signature.
struct AppStoreVerifier: Sendable {
    let configuration: VerifierConfiguration
    let chains: ChainVerifier
    /// Parsed headers, one per certificate chain seen (as many as chains are cached).
    let headers: JWSHeaderCache

    init(configuration: VerifierConfiguration) {
        self.configuration = configuration
        self.chains = ChainVerifier(
            roots: configuration.rootCertificates, cacheCapacity: configuration.chainCacheCapacity)
        self.headers = JWSHeaderCache(capacity: configuration.chainCacheCapacity)
    }

    func verifyTransaction(
        _ input: String, checkProductType: Bool = true
    ) async throws(ReceiptRefusal)
        -> VerifiedTransaction
    {
        let (jws, payload) = try await verifiedPayload(input, as: TransactionPayload.self) { $0.signedDate }
        return try transaction(from: payload, evidence: jws.compact, checkProductType: checkProductType)
    }

    func verifyNotification(_ input: String) async throws(ReceiptRefusal) -> VerifiedNotification {
        let (jws, payload) = try await verifiedPayload(input, as: NotificationPayload.self) { $0.signedDate }
        guard let type = payload.notificationType, !type.isEmpty else {
            throw ReceiptRefusal(.malformed, "notification has no notificationType")
        }
        guard let uuid = payload.notificationUUID, !uuid.isEmpty else {
            throw ReceiptRefusal(.malformed, "notification has no notificationUUID")
        }
        guard let subject = payload.subject else {
            throw ReceiptRefusal(.malformed, "notification has no data, summary, externalPurchaseToken or appData")
        }
        guard let bundleId = subject.bundleId, let environmentName = subject.environment else {
            throw ReceiptRefusal(.malformed, "notification does not name its bundleId and environment")
        }
        let environment = StoreEnvironment(rawValue: environmentName)
        try check(bundleId: bundleId, environment: environment)

        var transaction: VerifiedTransaction?
        if let signedTransaction = payload.data?.signedTransactionInfo {
            let verified: VerifiedTransaction
            do throws(ReceiptRefusal) {
                // A refund of any product is news, so the product type is not checked here.
                verified = try await verifyTransaction(signedTransaction, checkProductType: false)
            } catch {
                throw ReceiptRefusal(error.reason, "signedTransactionInfo: \(error.message)")
            }
            guard verified.environment == environment else {
                throw ReceiptRefusal(
                    .wrongEnvironment,
                    "notification is from \(environment) but its transaction is from \(verified.environment)")
            }
            transaction = verified
        }
        return VerifiedNotification(
            notificationType: .init(rawValue: type),
            subtype: payload.subtype,
            notificationUUID: uuid,
            signedDate: payload.signedDate ?? Date(timeIntervalSince1970: 0),
            environment: environment,
            bundleId: bundleId,
            appAppleId: subject.appAppleId,
            consumptionRequestReason: payload.data?.consumptionRequestReason,
            transaction: transaction,
            evidenceSHA256: Array(SHA256.hash(data: Array(jws.compact.utf8))))
    }

    /// Parses `input`, validates its chain at the payload's signed date and checks its signature.
    private func verifiedPayload<Payload: Decodable>(
        _ input: String, as type: Payload.Type, signedDate: (Payload) -> Date?
    ) async throws(ReceiptRefusal) -> (CompactJWS, Payload) {
        let jws = try CompactJWS(parsing: input, maxInputBytes: configuration.maxInputBytes, headerCache: headers)
        if let critical = jws.header.crit, !critical.isEmpty {
            throw ReceiptRefusal(.malformed, "JWS header has critical parameters \(critical), none are understood")
        }
        guard let algorithm = jws.header.alg else { throw ReceiptRefusal(.malformed, "JWS header has no alg") }
        guard algorithm == "ES256" else {
            throw ReceiptRefusal(.unsupportedAlgorithm, "JWS alg is \(algorithm.prefix(32)); only ES256 is accepted")
        }
        let payload = try jws.decodePayload(as: type)
        guard let validationTime = signedDate(payload) else {
            throw ReceiptRefusal(.malformed, "JWS payload has no signedDate")
        }
        // Read before the signature is checked, and the chain is validated at it: range-checked first.
        try configuration.dateWindow.check(validationTime, "JWS signedDate", reason: .malformed)
        try ReceiptRefusal.checkCancellation()

        // JWS carries ES256 signatures as raw r||s, 32 bytes each (RFC 7518 §3.4), not DER.
        guard jws.signatureSegment.count <= 88,
            let rawSignature = Base64.decode(jws.signatureSegment, alphabet: .url, maxDecodedBytes: 64),
            rawSignature.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: rawSignature)
        else { throw ReceiptRefusal(.invalidSignature, "JWS signature is not a 64-byte base64url ES256 signature") }
        try await chains.verify(x5c: jws.header.x5c, validationTime: validationTime) { leafKey throws(ReceiptRefusal) in
            guard leafKey.isValidSignature(signature, for: jws.signingInput) else {
                throw ReceiptRefusal(.invalidSignature, "JWS signature does not verify with the leaf certificate's key")
            }
        }
        return (jws, payload)
    }

    private func check(bundleId: String, environment: StoreEnvironment) throws(ReceiptRefusal) {
        guard bundleId == configuration.bundleId else {
            throw ReceiptRefusal(
                .wrongBundleId, "bundle id is \(bundleId.prefix(128)), expected \(configuration.bundleId)")
        }
        guard configuration.acceptedEnvironments.contains(environment) else {
            throw ReceiptRefusal(
                .wrongEnvironment,
                "environment \(environment.rawValue.prefix(32)) is not accepted "
                    + "(accepted: \(configuration.acceptedEnvironments.map(\.rawValue).sorted().joined(separator: ", ")))"
            )
        }
    }

    /// The verified transaction a signed payload describes, after the payload-level checks.
    private func transaction(
        from payload: TransactionPayload, evidence: String, checkProductType: Bool
    )
        throws(ReceiptRefusal) -> VerifiedTransaction
    {
        func required<T>(_ value: T?, _ name: String) throws(ReceiptRefusal) -> T {
            guard let value else { throw ReceiptRefusal(.malformed, "transaction payload has no \(name)") }
            return value
        }
        let transactionId = try required(payload.transactionId, "transactionId")
        let bundleId = try required(payload.bundleId, "bundleId")
        let productId = try required(payload.productId, "productId")
        let productType = ProductType(rawValue: try required(payload.type, "type"))
        let purchaseDate = try required(payload.purchaseDate, "purchaseDate")
        let signedDate = try required(payload.signedDate, "signedDate")
        let window = configuration.dateWindow
        try window.check(purchaseDate, "purchaseDate", reason: .malformed)
        if let original = payload.originalPurchaseDate {
            try window.check(original, "originalPurchaseDate", reason: .malformed)
        }
        if let revoked = payload.revocationDate { try window.check(revoked, "revocationDate", reason: .malformed) }
        let environment = StoreEnvironment(rawValue: try required(payload.environment, "environment"))
        let ownership = OwnershipType(rawValue: try required(payload.inAppOwnershipType, "inAppOwnershipType"))
        guard !transactionId.isEmpty, !productId.isEmpty else {
            throw ReceiptRefusal(.malformed, "transaction payload has an empty transactionId or productId")
        }

        try check(bundleId: bundleId, environment: environment)
        if checkProductType, !configuration.acceptedProductTypes.contains(productType) {
            throw ReceiptRefusal(
                .unsupportedProductType,
                "product type \(productType.rawValue.prefix(64)) is not accepted "
                    + "(accepted: \(configuration.acceptedProductTypes.map(\.rawValue).sorted().joined(separator: ", ")))"
            )
        }
        guard ownership == .purchased || ownership == .familyShared else {
            throw ReceiptRefusal(.malformed, "unknown inAppOwnershipType \(ownership.rawValue.prefix(32))")
        }
        if let price = payload.price {
            guard price >= 0, let currency = payload.currency, currency.utf8.count == 3 else {
                throw ReceiptRefusal(.malformed, "transaction payload has a price without a valid currency")
            }
        }

        return VerifiedTransaction(
            store: .appStore,
            environment: environment,
            transactionId: transactionId,
            originalTransactionId: payload.originalTransactionId ?? transactionId,
            bundleId: bundleId,
            productId: productId,
            productType: productType,
            purchaseDate: purchaseDate,
            originalPurchaseDate: payload.originalPurchaseDate ?? purchaseDate,
            signedDate: signedDate,
            priceMilli: payload.price,
            currency: payload.price == nil ? nil : payload.currency,
            storefront: payload.storefront,
            ownershipType: ownership,
            appAccountToken: payload.appAccountToken.flatMap { UUID(uuidString: $0) },
            revocationDate: payload.revocationDate,
            revocationReason: payload.revocationReason,
            revocationType: payload.revocationType,
            revocationPercentage: payload.revocationPercentage,
            evidenceSHA256: Array(SHA256.hash(data: Array(evidence.utf8))))
    }
}
