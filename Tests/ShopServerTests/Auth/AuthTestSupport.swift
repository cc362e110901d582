import Crypto
import Foundation
import ShopServer
import SwiftASN1
import Testing
import X509
import _CryptoExtras

/// Test clock: every test pins "now" here, well inside the test certificates' validity.
let authTestNow = Date(timeIntervalSince1970: 1_800_000_000)
let authTestProjectId = "sesac-shop-test"

/// An RSA-2048 key and a self-signed certificate for it, made at test time: stands in for one of Google's
/// securetoken keys.
struct TestSigningKey: Sendable {
    let privateKey: _RSA.Signing.PrivateKey
    let certificatePEM: String

    init(commonName: String, notValidBefore: Date, notValidAfter: Date) throws {
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
    var publicKeyDER: Data { privateKey.publicKey.derRepresentation }
    var publicKeyPEM: String { privateKey.publicKey.pemRepresentation }

    /// Generated once per test process: RSA key generation is slow in a debug build.
    static let primary = try! TestSigningKey(
        commonName: "primary", notValidBefore: authTestNow - 86_400, notValidAfter: authTestNow + 14 * 86_400)
    static let other = try! TestSigningKey(
        commonName: "other", notValidBefore: authTestNow - 86_400, notValidAfter: authTestNow + 14 * 86_400)
    static let rotated = try! TestSigningKey(
        commonName: "rotated", notValidBefore: authTestNow - 86_400, notValidAfter: authTestNow + 14 * 86_400)
    /// A certificate that expired a day before `authTestNow` (its key is `other`'s shape, not reused).
    static let expiredCertificate = try! TestSigningKey(
        commonName: "expired", notValidBefore: authTestNow - 30 * 86_400, notValidAfter: authTestNow - 86_400)
}

/// Builds and signs ID tokens like Firebase's: RS256 over `base64url(header).base64url(payload)`.
struct TestTokens {
    var signer: TestSigningKey = .primary
    var kid: String = "kid-primary"
    var header: [String: Any]? = nil
    var claims: [String: Any] = TestTokens.defaultClaims()

    static func defaultClaims(uid: String = "user-123", now: Date = authTestNow) -> [String: Any] {
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
    func token() throws -> String {
        let input = signingInput()
        let signature = try signer.privateKey.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + authBase64URL(signature.rawRepresentation)
    }

    /// `base64url(header).base64url(payload)`.
    func signingInput() -> String {
        let header = self.header ?? ["alg": "RS256", "kid": kid, "typ": "JWT"]
        return authBase64URL(authJSON(header)) + "." + authBase64URL(authJSON(claims))
    }

    /// A token with these claims and an arbitrary signature segment.
    func token(signatureSegment: String) -> String { signingInput() + "." + signatureSegment }

    /// A copy with some claims changed (`nil` removes the claim).
    func with(_ changes: [String: Any?]) -> TestTokens {
        var copy = self
        for (name, value) in changes { copy.claims[name] = value }
        return copy
    }
}

func authJSON(_ object: [String: Any]) -> Data {
    try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
}

func authBase64URL(_ data: some DataProtocol) -> String {
    Data(data).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

/// The Google securetoken x509 JSON for these keys.
func googleCertificateJSON(_ keys: [String: TestSigningKey]) -> Data {
    authJSON(keys.mapValues { $0.certificatePEM })
}

/// A verifier over an in-memory key set, clock pinned at `now`.
func makeFirebaseVerifier(
    keys: [String: TestSigningKey] = ["kid-primary": .primary],
    clockSkew: TimeInterval = FirebaseTokenVerifier.defaultClockSkew,
    now: Date = authTestNow
) throws -> FirebaseTokenVerifier {
    let certificates = try GoogleCertificates(parsingJSON: googleCertificateJSON(keys))
    return try FirebaseTokenVerifier(
        projectId: authTestProjectId, certificates: GoogleCertificateStore(certificates), clockSkew: clockSkew,
        now: { now })
}

/// The error `body` throws, or `nil` when it succeeds. (Untyped closure: `#expect`'s expansion loses
/// the contextual typed-throws of a closure written inside it; the library's signatures are typed.)
func refusal<T>(_ body: () throws -> T) -> AuthError? {
    caught(AuthError.self, body)
}

/// The configuration error `body` throws, or `nil` when it succeeds.
func configurationRefusal<T>(_ body: () throws -> T) -> AuthConfigurationError? {
    caught(AuthConfigurationError.self, body)
}

private func caught<E: Error, T>(_ type: E.Type, _ body: () throws -> T) -> E? {
    do {
        _ = try body()
        return nil
    } catch let error as E {
        return error
    } catch {
        Issue.record("expected \(E.self), got \(error)")
        return nil
    }
}

/// A fresh directory under the system temp dir, removed by `body`'s end.
func withAuthTestDirectory<T>(_ body: (URL) throws -> T) throws -> T {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("shopledger-auth-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try body(directory)
}
