import Crypto
import Foundation
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

/// Verifies classic App Store receipts offline, as on-device validation does.
///
/// Order of checks: size and base64; the BER `SignedData` container (at most four certificates) and the
/// DER receipt attributes, every date in ``SignedDateWindow`` (`malformed_receipt`); the signature
/// algorithm and those of the signing certificate and its issuer (SHA-256 only, `weak_signature_algorithm`
/// for SHA-1); the signature with the signing certificate's key (`invalid_signature`), so that junk costs
/// one check; the chain from the signer through Apple's WWDR intermediate (its marker OID) to a configured
/// root, the leaf carrying the receipt-signing OID, validated at the receipt's creation date and built
/// only from certificates named as an issuer being sought (`untrusted_chain`); only then what the receipt
/// says: bundle id and environment.
struct AppReceiptVerifier: Sendable {
    let configuration: VerifierConfiguration
    private let roots: CertificateStore

    /// The hard ceiling on a classic receipt, whatever ``VerifierConfiguration/maxInputBytes`` says:
    /// 1 MiB of base64 (a receipt of several hundred purchases is well under it).
    static let maximumBase64Bytes = 1 << 20

    static let sha256OID: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 1]
    static let sha1OID: ASN1ObjectIdentifier = [1, 3, 14, 3, 2, 26]
    static let md5OID: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 2, 5]
    static let rsaEncryptionOID: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 1]
    static let sha256WithRSAOID: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 11]
    static let sha1WithRSAOID: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 5]
    static let md5WithRSAOID: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 4]
    static let ecdsaWithSHA1OID: ASN1ObjectIdentifier = [1, 2, 840, 10045, 4, 1]
    static let ecdsaWithSHA256OID: ASN1ObjectIdentifier = [1, 2, 840, 10045, 4, 3, 2]

    init(configuration: VerifierConfiguration) {
        self.configuration = configuration
        self.roots = CertificateStore(configuration.receiptRootCertificates.map(\.certificate))
    }

    func verify(_ input: String) async throws(ReceiptRefusal) -> VerifiedAppReceipt {
        let limit = min(configuration.maxInputBytes, Self.maximumBase64Bytes)
        guard input.utf8.count <= limit else {
            throw ReceiptRefusal(
                .malformedReceipt, "receipt is \(input.utf8.count) bytes, over the \(limit)-byte limit")
        }
        guard let der = Self.decodeBase64(input, maxDecodedBytes: limit) else {
            throw ReceiptRefusal(.malformedReceipt, "receipt is not base64")
        }
        let container = try SignedReceipt(berEncoded: der)
        let receipt = try AppReceipt.parsePayload(container.content[...])
        // Every date is checked before any is used: the chain is validated at the creation date.
        try Self.checkDates(of: receipt, in: configuration.dateWindow)

        let algorithm = try Self.signatureAlgorithm(of: container)
        guard let leaf = container.signerCertificate else {
            throw ReceiptRefusal(.untrustedChain, "the receipt does not carry the certificate that signed it")
        }
        let issuer = container.certificates.first { $0.subject == leaf.issuer && $0 != leaf }
        for (name, certificate) in [("signing", leaf), ("intermediate", issuer)] {
            if let certificate, Self.isWeak(certificate.signatureAlgorithm) {
                throw ReceiptRefusal(
                    .weakSignatureAlgorithm,
                    "the \(name) certificate is signed with \(certificate.signatureAlgorithm); SHA-256 is required")
            }
        }
        // The signature first, with the key the receipt presents: junk costs one check, not a chain.
        try ReceiptRefusal.checkCancellation()
        try Self.checkSignature(of: container, with: leaf, algorithm: algorithm)
        try ReceiptRefusal.checkCancellation()
        try await validateChain(leaf: leaf, certificates: container.certificates, at: receipt.creationDate)

        guard receipt.bundleId == configuration.bundleId else {
            throw ReceiptRefusal(
                .wrongBundleId, "bundle id is \(receipt.bundleId.prefix(128)), expected \(configuration.bundleId)")
        }
        let environment = receipt.environment
        guard configuration.acceptedEnvironments.contains(environment) else {
            throw ReceiptRefusal(
                .wrongEnvironment,
                "receipt type \(receipt.receiptType.prefix(32)) (environment \(environment.rawValue.prefix(32))) is not "
                    + "accepted (accepted: \(configuration.acceptedEnvironments.map(\.rawValue).sorted().joined(separator: ", ")))"
            )
        }
        let evidence = Array(SHA256.hash(data: der))
        return VerifiedAppReceipt(
            receipt: receipt,
            transactions: receipt.purchases.map { Self.transaction($0, of: receipt, evidence: evidence) },
            evidenceSHA256: evidence)
    }

    /// What a receipt says, read without verifying anything (for support tools): nil when it does not parse.
    static func unverifiedReceipt(_ input: String) -> AppReceipt? {
        guard let der = decodeBase64(input, maxDecodedBytes: maximumBase64Bytes),
            let container = try? SignedReceipt(berEncoded: der)
        else { return nil }
        return try? AppReceipt.parsePayload(container.content[...])
    }

    /// Standard base64 as form bodies deliver it: line breaks dropped, and spaces read as the `+` a careless
    /// form encoder turned into them. Otherwise strict (``Base64``).
    static func decodeBase64(_ input: String, maxDecodedBytes: Int) -> [UInt8]? {
        var text: [UInt8] = []
        text.reserveCapacity(input.utf8.count)
        for byte in Array(input.utf8).trimmingASCIIWhitespace() {
            switch byte {
            case 0x0A, 0x0D, 0x09: continue
            case 0x20: text.append(UInt8(ascii: "+"))
            default: text.append(byte)
            }
        }
        return Base64.decode(text[...], alphabet: .standard, maxDecodedBytes: maxDecodedBytes)
    }

    /// The signature algorithm the signer used, as swift-certificates names it. Apple writes the bare
    /// `rsaEncryption` identifier with the hash in `digestAlgorithm`, so both are read together.
    static func signatureAlgorithm(of container: SignedReceipt) throws(ReceiptRefusal) -> Certificate.SignatureAlgorithm
    {
        let digest = container.digestAlgorithm
        let signature = container.signatureAlgorithm
        if digest == sha1OID || digest == md5OID
            || [sha1WithRSAOID, md5WithRSAOID, ecdsaWithSHA1OID].contains(signature)
        {
            throw ReceiptRefusal(
                .weakSignatureAlgorithm,
                "the receipt is signed with digest \(digest) and algorithm \(signature); SHA-256 is required")
        }
        guard digest == sha256OID else {
            throw ReceiptRefusal(.invalidSignature, "digest algorithm \(digest) is not supported; SHA-256 is required")
        }
        switch signature {
        case rsaEncryptionOID, sha256WithRSAOID: return .sha256WithRSAEncryption
        case ecdsaWithSHA256OID: return .ecdsaWithSHA256
        default: throw ReceiptRefusal(.invalidSignature, "signature algorithm \(signature) is not supported")
        }
    }

    /// SHA-1 or MD5, however the parameters are encoded (swift-certificates names only the NULL-parameter
    /// form, so the identifier's text is checked too).
    static func isWeak(_ algorithm: Certificate.SignatureAlgorithm) -> Bool {
        if algorithm == .sha1WithRSAEncryption { return true }
        let text = String(describing: algorithm).lowercased()
        return text.contains("sha1")
            || ["1.2.840.113549.1.1.5", "1.2.840.113549.1.1.4", "1.2.840.10045.4.1"]
                .contains { text.contains($0) }
    }

    private func validateChain(
        leaf: Certificate, certificates: [Certificate], at time: Date
    ) async throws(ReceiptRefusal) {
        guard SignedDateWindow.isRepresentableInX509(time) else {
            throw ReceiptRefusal(.malformedReceipt, "the creation date is not a date an X.509 chain can be checked at")
        }
        // A configured root that signs receipts itself: Xcode's StoreKit Testing certificate, trusted only
        // because the operator configured it (Apple's own roots never sign receipts directly).
        if configuration.receiptRootCertificates.contains(where: { $0.certificate == leaf }) {
            guard leaf.notValidBefore <= time, time <= leaf.notValidAfter else {
                throw ReceiptRefusal(
                    .untrustedChain, "the signing root certificate is not valid at the receipt's creation date")
            }
            return
        }
        var verifier = Verifier(rootCertificates: roots) {
            RFC5280Policy(fixedExpiryValidationTime: time)
            AppStoreOIDPolicy()
        }
        let result = await verifier.validate(
            leaf: leaf, intermediates: CertificateStore(Self.issuerCandidates(of: leaf, among: certificates)))
        guard case .validCertificate = result else {
            throw ReceiptRefusal(
                .untrustedChain, Self.diagnose(result, leaf: leaf, certificates: certificates, at: time))
        }
    }

    /// The certificates that can stand above `leaf` in a chain: those named as the issuer being sought,
    /// from the leaf upwards. Only these reach the chain builder, so a receipt's other certificates add
    /// no path to try.
    static func issuerCandidates(of leaf: Certificate, among certificates: [Certificate]) -> [Certificate] {
        var candidates: [Certificate] = []
        var sought = [leaf.issuer]
        while let name = sought.popLast() {
            for certificate in certificates
            where certificate.subject == name && certificate != leaf && !candidates.contains(certificate) {
                candidates.append(certificate)
                if certificate.issuer != certificate.subject { sought.append(certificate.issuer) }
            }
        }
        return candidates
    }

    /// The creation date and each entry's dates lie in the window (``SignedDateWindow``); a subscription's
    /// expiry may lie in the future and is only parsed.
    static func checkDates(of receipt: AppReceipt, in window: SignedDateWindow) throws(ReceiptRefusal) {
        try window.check(receipt.creationDate, "the receipt's creation date", reason: .malformedReceipt)
        for (index, purchase) in receipt.purchases.enumerated() {
            let what = "in-app purchase #\(index + 1)'s"
            try window.check(purchase.purchaseDate, "\(what) purchase date", reason: .malformedReceipt)
            try window.check(purchase.originalPurchaseDate, "\(what) original purchase date", reason: .malformedReceipt)
            if let cancelled = purchase.cancellationDate {
                try window.check(cancelled, "\(what) cancellation date", reason: .malformedReceipt)
            }
        }
    }

    private static func checkSignature(
        of container: SignedReceipt, with leaf: Certificate, algorithm: Certificate.SignatureAlgorithm
    ) throws(ReceiptRefusal) {
        let signedBytes: [UInt8]
        if let attributes = container.signedAttributes {
            // RFC 5652 §5.4: the signature covers the attributes, which carry the content's digest.
            if let type = container.signedContentType, type != SignedReceipt.dataOID {
                throw ReceiptRefusal(.invalidSignature, "the signed content-type attribute is \(type), not data")
            }
            guard let digest = container.messageDigest,
                digest.elementsEqual(SHA256.hash(data: container.content))
            else {
                throw ReceiptRefusal(.invalidSignature, "the signed message digest does not match the receipt content")
            }
            signedBytes = attributes
        } else {
            signedBytes = container.content
        }
        guard leaf.publicKey.isValidSignature(container.signature, for: signedBytes, signatureAlgorithm: algorithm)
        else {
            throw ReceiptRefusal(
                .invalidSignature, "the receipt signature does not verify with the signing certificate's key")
        }
    }

    /// A readable reason for a chain the `Verifier` refused: the failing policy's own
    /// (``ChainRefusalReason``), at the time the chain was checked at.
    private static func diagnose(
        _ result: CertificateValidationResult, leaf: Certificate, certificates: [Certificate], at time: Date
    ) -> String {
        let at = "at the receipt's creation date \(time.ISO8601Format())"
        if case .couldNotValidate(let failures) = result,
            let reason = ChainRefusalReason.describe(failures, leafName: "signing")
        {
            return "the receipt's certificate chain is refused \(at): \(reason)"
        }
        // No policy failed because no chain reached a root, so the `Verifier` says nothing: we name the
        // commonest cause, a receipt without its intermediate, ourselves.
        guard certificates.contains(where: { $0.subject == leaf.issuer && $0 != leaf }) else {
            return "the receipt does not carry the signing certificate's issuer"
        }
        return "the receipt's certificates do not chain to a configured receipt root certificate \(at)"
    }

    /// An in-app entry as a verified transaction: unpriced (receipts carry no price), bought (receipts do
    /// not tell family sharing apart), refunded when Apple set its cancellation date.
    static func transaction(
        _ purchase: AppReceipt.Purchase, of receipt: AppReceipt, evidence: [UInt8]
    )
        -> VerifiedTransaction
    {
        VerifiedTransaction(
            store: .appStore,
            environment: receipt.environment,
            transactionId: purchase.transactionId,
            originalTransactionId: purchase.originalTransactionId,
            bundleId: receipt.bundleId,
            productId: purchase.productId,
            // The receipt names no product type; only subscriptions carry an expiry date. Everything else is
            // treated as the shop's kind, Non-Consumable, and the catalog decides whether it is sold.
            productType: purchase.subscriptionExpirationDate == nil ? .nonConsumable : .autoRenewableSubscription,
            purchaseDate: purchase.purchaseDate,
            originalPurchaseDate: purchase.originalPurchaseDate,
            signedDate: receipt.creationDate,
            revocationDate: purchase.cancellationDate,
            evidenceSHA256: evidence)
    }
}
