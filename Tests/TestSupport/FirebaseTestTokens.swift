import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

// Firebase ID tokens and Google's securetoken certificates, made at test time: ShopServerTests check the
// verifier with them, FaultTests sign in to a production-configured `shopledger serve` with them.

/// Test clock: every test pins "now" here, well inside the test certificates' validity.
public let authTestNow = Date(timeIntervalSince1970: 1_800_000_000)
public let authTestProjectId = "sesac-shop-test"

/// An RSA-2048 key and a self-signed certificate for it, made at test time: stands in for one of Google's
/// securetoken keys.
public struct TestSigningKey: Sendable {
    public let privateKey: _RSA.Signing.PrivateKey
    public let certificatePEM: String

    public init(commonName: String, notValidBefore: Date, notValidAfter: Date) throws {
        privateKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let issuerKey = Certificate.PrivateKey(privateKey)
        let name = try DistinguishedName { CommonName(commonName) }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: issuerKey.publicKey,
            notValidBefore: notValidBefore,
            notValidAfter: notValidAfter,
            issuer: name,
            subject: name,
            signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: Certificate.Extensions(),
            issuerPrivateKey: issuerKey
        )
        certificatePEM = try certificate.serializeAsPEM().pemString
    }

    /// The DER SubjectPublicKeyInfo of the public key: what an HS256 "key confusion" attacker would use
    /// as the HMAC secret.
    public var publicKeyDER: Data { privateKey.publicKey.derRepresentation }
    public var publicKeyPEM: String { privateKey.publicKey.pemRepresentation }

    /// Generated once per test process: RSA key generation is slow in a debug build.
    public static let primary = try! TestSigningKey(
        commonName: "primary", notValidBefore: authTestNow - 86_400, notValidAfter: authTestNow + 14 * 86_400)
    public static let other = try! TestSigningKey(
        commonName: "other", notValidBefore: authTestNow - 86_400, notValidAfter: authTestNow + 14 * 86_400)
    public static let rotated = try! TestSigningKey(
        commonName: "rotated", notValidBefore: authTestNow - 86_400, notValidAfter: authTestNow + 14 * 86_400)
    /// A certificate that expired a day before `authTestNow` (its key is `other`'s shape, not reused).
    public static let expiredCertificate = try! TestSigningKey(
        commonName: "expired", notValidBefore: authTestNow - 30 * 86_400, notValidAfter: authTestNow - 86_400)
}

/// Builds and signs ID tokens like Firebase's: RS256 over `base64url(header).base64url(payload)`.
public struct TestTokens {
    public var signer: TestSigningKey = .primary
    public var kid: String = "kid-primary"
    public var header: [String: Any]? = nil
    public var claims: [String: Any] = TestTokens.defaultClaims()

    public init(
        signer: TestSigningKey = .primary, kid: String = "kid-primary", header: [String: Any]? = nil,
        claims: [String: Any] = TestTokens.defaultClaims()
    ) {
        self.signer = signer
        self.kid = kid
        self.header = header
        self.claims = claims
    }

    public static func defaultClaims(uid: String = "user-123", now: Date = authTestNow) -> [String: Any] {
        [
            "iss": "https://securetoken.google.com/\(authTestProjectId)",
            "aud": authTestProjectId,
            "sub": uid,
            "user_id": uid,
            "iat": Int(now.timeIntervalSince1970) - 10,
            "exp": Int(now.timeIntervalSince1970) + 3590,
            "auth_time": Int(now.timeIntervalSince1970) - 100,
            "firebase": ["identities": ["phone": ["+821012345678"]], "sign_in_provider": "phone"],
        ]
    }

    /// The compact token, signed with `signer` (RSASSA-PKCS1-v1_5 SHA-256).
    public func token() throws -> String {
        let input = signingInput()
        let signature = try signer.privateKey.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + authBase64URL(signature.rawRepresentation)
    }

    /// `base64url(header).base64url(payload)`.
    public func signingInput() -> String {
        let header = self.header ?? ["alg": "RS256", "kid": kid, "typ": "JWT"]
        return authBase64URL(authJSON(header)) + "." + authBase64URL(authJSON(claims))
    }

    /// A token with these claims and an arbitrary signature segment.
    public func token(signatureSegment: String) -> String { signingInput() + "." + signatureSegment }

    /// A copy with some claims changed (`nil` removes the claim).
    public func with(_ changes: [String: Any?]) -> TestTokens {
        var copy = self
        for (name, value) in changes { copy.claims[name] = value }
        return copy
    }
}

public func authJSON(_ object: [String: Any]) -> Data {
    try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
}

public func authBase64URL(_ data: some DataProtocol) -> String {
    Data(data).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

/// The Google securetoken x509 JSON for these keys.
public func googleCertificateJSON(_ keys: [String: TestSigningKey]) -> Data {
    authJSON(keys.mapValues { $0.certificatePEM })
}
