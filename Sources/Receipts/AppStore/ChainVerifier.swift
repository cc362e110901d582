import Crypto
import Foundation
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

/// Validates a JWS `x5c` chain the way Apple's library does offline: exactly three certificates, the
/// leaf and intermediate (never the sender's root) built to a configured root with swift-certificates'
/// `Verifier`, RFC 5280 rules and certificate validity at the payload's `signedDate`, plus Apple's OIDs.
final class ChainVerifier: Sendable {
    private let roots: CertificateStore
    private let cache: VerifiedChainCache

    /// Certificates in Apple's chains are about 1 KiB; refuse anything far larger before decoding.
    private static let maxCertificateBytes = 4 * 1024

    init(roots: [RootCertificate], cacheCapacity: Int) {
        self.roots = CertificateStore(roots.map(\.certificate))
        self.cache = VerifiedChainCache(capacity: cacheCapacity)
    }

    var cachedChains: Int { cache.count }

    /// Checks `signature` with the leaf's P-256 key, then that the chain validates at `validationTime`.
    ///
    /// On a cache miss the signature is checked with the key the leaf presents *before* the chain is
    /// built, so a forged JWS costs one signature check; a remembered chain costs only that check.
    /// `validationTime` must already lie in ``SignedDateWindow``.
    func verify(
        x5c: [String]?, validationTime: Date,
        signature: (P256.Signing.PublicKey) throws(ReceiptRefusal) -> Void
    ) async throws(ReceiptRefusal) {
        guard SignedDateWindow.isRepresentableInX509(validationTime) else {
            throw ReceiptRefusal(.malformed, "the validation time is not a date an X.509 chain can be checked at")
        }
        guard let x5c else { throw ReceiptRefusal(.untrustedChain, "JWS header has no x5c certificate chain") }
        guard x5c.count == 3 else {
            throw ReceiptRefusal(.untrustedChain, "x5c must hold exactly 3 certificates, it holds \(x5c.count)")
        }
        let leafDER = try Self.der(x5c[0], position: 0)
        let intermediateDER = try Self.der(x5c[1], position: 1)
        let key = VerifiedChainCache.Key(leafDER: leafDER, intermediateDER: intermediateDER)
        if let cached = cache.leafKey(for: key, at: validationTime) {
            try signature(cached)
            return
        }

        let leaf = try Self.certificate(leafDER, position: 0)
        guard let leafKey = P256.Signing.PublicKey(leaf.publicKey) else {
            throw ReceiptRefusal(.invalidSignature, "the leaf certificate's key is not a P-256 key")
        }
        try signature(leafKey)
        try ReceiptRefusal.checkCancellation()
        let intermediate = try Self.certificate(intermediateDER, position: 1)
        var verifier = Verifier(rootCertificates: roots) {
            RFC5280Policy(fixedExpiryValidationTime: validationTime)
            AppStoreOIDPolicy()
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate]))
        guard case .validCertificate(let chain) = result else {
            throw ReceiptRefusal(.untrustedChain, Self.diagnose(result, at: validationTime))
        }
        cache.remember(
            key, leafKey: leafKey,
            validFrom: chain.map(\.notValidBefore).max() ?? leaf.notValidBefore,
            validUntil: chain.map(\.notValidAfter).min() ?? leaf.notValidAfter)
    }

    private static func der(_ base64: String, position: Int) throws(ReceiptRefusal) -> [UInt8] {
        guard base64.utf8.count <= (maxCertificateBytes / 3 + 1) * 4,
            let der = Base64.decode(base64, alphabet: .standard, maxDecodedBytes: maxCertificateBytes),
            !der.isEmpty
        else { throw ReceiptRefusal(.untrustedChain, "x5c[\(position)] is not a base64 certificate of at most 4 KiB") }
        return der
    }

    private static func certificate(_ der: [UInt8], position: Int) throws(ReceiptRefusal) -> Certificate {
        let certificate: Certificate
        do {
            certificate = try Certificate(derEncoded: der)
        } catch {
            throw ReceiptRefusal(.untrustedChain, "x5c[\(position)] is not a DER X.509 certificate")
        }
        guard !CertificateValidityTimes.haveLeapSecond(certificate) else {
            throw ReceiptRefusal(.untrustedChain, "x5c[\(position)] has a validity time with 60 or more seconds")
        }
        return certificate
    }

    /// A readable reason for a chain the `Verifier` refused: the failing policy's own
    /// (``ChainRefusalReason``), at the time the chain was checked at.
    private static func diagnose(_ result: CertificateValidationResult, at time: Date) -> String {
        let at = "at signedDate \(time.ISO8601Format())"
        guard case .couldNotValidate(let failures) = result,
            let reason = ChainRefusalReason.describe(failures, leafName: "leaf")
        else {
            // No policy failed because no chain reached a root: the one reason we must name ourselves.
            return "the x5c chain does not validate to a configured root certificate \(at)"
        }
        return "the x5c chain is refused \(at): \(reason)"
    }
}
