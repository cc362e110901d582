import Crypto
import Foundation
import _CryptoExtras

/// Verifies Firebase ID tokens the way Firebase documents for third-party JWT libraries:
///
/// - header: `alg` is `RS256` (nothing else, so never `none` or `HS256`), `kid` names a loaded Google
///   certificate that is valid now;
/// - signature: RSASSA-PKCS1-v1_5 with SHA-256 over `header.payload`, with that certificate's key;
/// - payload: `iss` is `https://securetoken.google.com/<projectId>`, `aud` is `<projectId>`, `exp` in the
///   future, `iat` and `auth_time` (if present) not in the future, each allowing ``clockSkew``; `sub` is
///   1–128 characters and is the uid.
///
/// Synchronous and cheap: keys are parsed when the certificate file is loaded, the size is bounded before
/// decoding, and the payload JSON is parsed only once the signature holds.
public struct FirebaseTokenVerifier: IdentityVerifier {
    public static let defaultClockSkew: TimeInterval = 60
    /// Firebase ID tokens are about 1 KiB, more with custom claims (at most 1,000 bytes of them).
    public static let defaultMaxTokenBytes = 8 * 1024
    /// Firebase uids are at most 128 characters.
    public static let maxUIDLength = 128

    public let projectId: String
    /// `https://securetoken.google.com/<projectId>`.
    public let expectedIssuer: String
    public let clockSkew: TimeInterval
    public let maxTokenBytes: Int
    public let certificates: GoogleCertificateStore
    private let now: @Sendable () -> Date

    /// - Parameters:
    ///   - projectId: the Firebase project id (letters, digits, `-`, `.`, `:`).
    ///   - certificates: Google's keys; reload them through the store when the file rotates.
    ///   - clockSkew: seconds of tolerance for `exp`, `iat`, `auth_time` and the certificate's validity
    ///     (0...3600).
    ///   - maxTokenBytes: longer tokens are refused before any decoding.
    ///   - now: the clock (tests pin it).
    public init(
        projectId: String,
        certificates: GoogleCertificateStore,
        clockSkew: TimeInterval = FirebaseTokenVerifier.defaultClockSkew,
        maxTokenBytes: Int = FirebaseTokenVerifier.defaultMaxTokenBytes,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws(AuthConfigurationError) {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.:")
        guard !projectId.isEmpty, projectId.count <= 100, projectId.allSatisfy(allowed.contains) else {
            throw AuthConfigurationError(
                "the Firebase project id must be 1–100 characters of letters, digits, '-', '.' or ':'")
        }
        guard clockSkew.isFinite, (0...3600).contains(clockSkew) else {
            throw AuthConfigurationError("the clock skew must be between 0 and 3600 seconds")
        }
        guard maxTokenBytes > 0 else { throw AuthConfigurationError("the maximum token size must be positive") }
        self.projectId = projectId
        self.expectedIssuer = "https://securetoken.google.com/\(projectId)"
        self.clockSkew = clockSkew
        self.maxTokenBytes = maxTokenBytes
        self.certificates = certificates
        self.now = now
    }

    public func uid(forToken token: String) throws(AuthError) -> String {
        try verify(token).uid
    }

    /// All the verified claims of `token`, or why it is refused.
    public func verify(_ token: String) throws(AuthError) -> IDTokenClaims {
        let parsed = try CompactIDToken(parsing: token, maxBytes: maxTokenBytes)
        let header = parsed.header

        guard let algorithm = header.alg else { throw AuthError(.malformedToken, "the token header has no alg") }
        guard algorithm == "RS256" else {
            throw AuthError(.unsupportedAlgorithm, "only RS256 tokens are accepted")
        }
        guard !header.hasCritical else {
            throw AuthError(.malformedToken, "the token header has critical extensions, which are not supported")
        }
        guard let keyID = header.kid else { throw AuthError(.unknownKey, "the token header names no key (kid)") }
        guard let key = certificates.certificates[keyID] else {
            throw AuthError(
                .unknownKey, "the token is signed with a key that is not among Google's loaded certificates")
        }
        let date = now()
        guard key.isValid(at: date, skew: clockSkew) else {
            throw AuthError(.keyNotValid, "the certificate of the token's signing key is not valid now")
        }
        let signature = _RSA.Signing.RSASignature(rawRepresentation: parsed.signature)
        guard
            key.publicKey.isValidSignature(
                signature, for: SHA256.hash(data: parsed.signingInput), padding: .insecurePKCS1v1_5)
        else { throw AuthError(.invalidSignature, "the token's signature does not verify") }

        return try checkClaims(parsed.decodePayload(), at: date)
    }

    private func checkClaims(_ payload: IDTokenClaims.Payload, at date: Date) throws(AuthError) -> IDTokenClaims {
        guard let issuer = payload.iss?.string, issuer == expectedIssuer else {
            throw AuthError(.wrongIssuer, "the token was not issued for this app's Firebase project")
        }
        guard let audience = payload.aud?.string, audience == projectId else {
            throw AuthError(.wrongAudience, "the token is for another audience than this app's Firebase project")
        }
        guard let exp = payload.exp, let iat = payload.iat else {
            throw AuthError(.malformedToken, "the token has no exp or iat")
        }
        let expiresAt = Date(timeIntervalSince1970: exp)
        let issuedAt = Date(timeIntervalSince1970: iat)
        guard date < expiresAt.addingTimeInterval(clockSkew) else {
            throw AuthError(.expired, "the token has expired")
        }
        guard issuedAt <= date.addingTimeInterval(clockSkew) else {
            throw AuthError(.notYetValid, "the token was issued in the future")
        }
        let authTime = payload.authTime.map { Date(timeIntervalSince1970: $0) }
        if let authTime, authTime > date.addingTimeInterval(clockSkew) {
            throw AuthError(.notYetValid, "the token's sign-in time is in the future")
        }
        guard let uid = payload.sub?.string, !uid.isEmpty, uid.count <= Self.maxUIDLength else {
            throw AuthError(.invalidSubject, "the token's subject must be a uid of 1–\(Self.maxUIDLength) characters")
        }
        return IDTokenClaims(
            uid: uid, issuer: issuer, audience: audience, issuedAt: issuedAt, expiresAt: expiresAt,
            authTime: authTime, signInProvider: payload.signInProvider)
    }
}
