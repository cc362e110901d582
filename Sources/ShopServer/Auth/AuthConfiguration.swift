import Foundation

/// The auth settings, as the composition root reads them from the command line or environment.
///
/// Firebase verification needs both ``firebaseProjectId`` and ``googleCertificatesPath``. Development
/// tokens (`dev:<uid>`) are accepted only when ``acceptsDevelopmentTokens`` is set, never by default;
/// with development tokens on and no Firebase settings, only development tokens are accepted.
public struct AuthConfiguration: Sendable {
    /// The Firebase project id: the required `aud`, and the suffix of the required `iss`.
    public var firebaseProjectId: String?
    /// Google's securetoken X.509 certificate file (JSON, `kid` → PEM), kept fresh by an operator's job.
    public var googleCertificatesPath: String?
    /// Tolerance in seconds for `exp`, `iat`, `auth_time` and certificate validity.
    public var clockSkew: TimeInterval
    /// Accept `dev:<uid>` tokens. For local development and tests only.
    public var acceptsDevelopmentTokens: Bool
    /// The bearer token of the admin endpoints; `nil` refuses every admin request.
    public var adminToken: String?
    /// Who holds the admin token: the actor recorded on every support action taken with it.
    public var adminLabel: String

    public init(
        firebaseProjectId: String? = nil,
        googleCertificatesPath: String? = nil,
        clockSkew: TimeInterval = FirebaseTokenVerifier.defaultClockSkew,
        acceptsDevelopmentTokens: Bool = false,
        adminToken: String? = nil,
        adminLabel: String = "admin"
    ) {
        self.adminLabel = adminLabel
        self.firebaseProjectId = firebaseProjectId
        self.googleCertificatesPath = googleCertificatesPath
        self.clockSkew = clockSkew
        self.acceptsDevelopmentTokens = acceptsDevelopmentTokens
        self.adminToken = adminToken
    }
}
