import Crypto
import Foundation
import _CryptoExtras

/// Verifies the `Authorization: Bearer` token of a Cloud Pub/Sub push request: an OIDC ID token Google
/// signs (RS256) for a push subscription with authentication. Accepted only when its signature verifies
/// with one of Google's OAuth certificates (the same ``GoogleCertificateStore`` machinery as Firebase's
/// tokens, loaded from `https://www.googleapis.com/oauth2/v1/certs` or a file), the certificate is valid
/// now, `iss` is Google's accounts issuer, `aud` the audience configured on the subscription, `email` the
/// subscription's service account with `email_verified` true, and it has not expired.
public struct PubSubPushVerifier: Sendable {
    public static let issuers: Set<String> = ["accounts.google.com", "https://accounts.google.com"]
    public let audience: String
    public let serviceAccountEmail: String
    public let certificates: GoogleCertificateStore
    public let clockSkew: TimeInterval
    private let now: @Sendable () -> Date

    public init(
        audience: String, serviceAccountEmail: String, certificates: GoogleCertificateStore,
        clockSkew: TimeInterval = 60, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.audience = audience
        self.serviceAccountEmail = serviceAccountEmail
        self.certificates = certificates
        self.clockSkew = clockSkew
        self.now = now
    }

    private struct Payload: Decodable {
        var iss: String?
        var aud: String?
        var email: String?
        var emailVerified: Bool?
        var exp: Double?
        var iat: Double?

        enum CodingKeys: String, CodingKey {
            case iss, aud, email, exp, iat
            case emailVerified = "email_verified"
        }
    }

    /// Checks the token of an `Authorization` header value (`Bearer <token>`).
    public func verify(authorization: String?) throws(AuthError) {
        guard let authorization, authorization.hasPrefix("Bearer ") else {
            throw AuthError(.missingToken, "a Pub/Sub push carries a Google-signed token in Authorization: Bearer")
        }
        let parsed = try CompactIDToken(parsing: String(authorization.dropFirst("Bearer ".count)), maxBytes: 8 * 1024)
        guard parsed.header.alg == "RS256" else {
            throw AuthError(.unsupportedAlgorithm, "only RS256 tokens are accepted")
        }
        guard !parsed.header.hasCritical else {
            throw AuthError(.malformedToken, "the token header has critical extensions, which are not supported")
        }
        guard let keyID = parsed.header.kid, let key = certificates.certificates[keyID] else {
            throw AuthError(.unknownKey, "the token is not signed with one of Google's loaded keys")
        }
        let date = now()
        guard key.isValid(at: date, skew: clockSkew) else {
            throw AuthError(.keyNotValid, "the certificate of the token's signing key is not valid now")
        }
        guard
            key.publicKey.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: parsed.signature),
                for: SHA256.hash(data: parsed.signingInput), padding: .insecurePKCS1v1_5)
        else { throw AuthError(.invalidSignature, "the token's signature does not verify") }
        let payload: Payload
        do {
            payload = try JSONDecoder().decode(Payload.self, from: Data(parsed.payloadJSON))
        } catch {
            throw AuthError(.malformedToken, "the token payload is not a JSON object of the expected shape")
        }
        guard let issuer = payload.iss, Self.issuers.contains(issuer) else {
            throw AuthError(.wrongIssuer, "the token was not issued by Google's accounts")
        }
        guard payload.aud == audience else {
            throw AuthError(.wrongAudience, "the token is for another audience than this push endpoint")
        }
        guard payload.email == serviceAccountEmail, payload.emailVerified == true else {
            throw AuthError(.invalidSubject, "the token is not the push subscription's service account's")
        }
        guard let exp = payload.exp, date < Date(timeIntervalSince1970: exp).addingTimeInterval(clockSkew) else {
            throw AuthError(.expired, "the token has expired")
        }
        if let iat = payload.iat, Date(timeIntervalSince1970: iat) > date.addingTimeInterval(clockSkew) {
            throw AuthError(.notYetValid, "the token was issued in the future")
        }
    }
}
