import Foundation
import Logging

/// The auth settings, as the composition root reads them from the command line or environment.
///
/// Firebase verification needs ``firebaseProjectId`` and Google's certificates: from a file
/// (``googleCertificatesPath``) or from a URL (``googleCertificatesURL``, fetched once before the
/// application is built: ``fetchingGoogleCertificates(within:logger:)``). Development
/// tokens (`dev:<uid>`) are accepted only when ``acceptsDevelopmentTokens`` is set, never by default;
/// with development tokens on and no Firebase settings, only development tokens are accepted.
public struct AuthConfiguration: Sendable {
    /// The Firebase project id: the required `aud`, and the suffix of the required `iss`.
    public var firebaseProjectId: String?
    /// Google's securetoken X.509 certificate file (JSON, `kid` → PEM), kept fresh by an operator's job (or ``googleCertificatesURL``).
    public var googleCertificatesPath: String?
    /// Where to fetch Google's certificates from instead (``GoogleCertificateFetcher/googleURL``), kept
    /// fresh as the answer's `Cache-Control` says.
    public var googleCertificatesURL: String?
    /// The document fetched from ``googleCertificatesURL`` before the application is built.
    public var fetchedGoogleCertificates: FetchedGoogleCertificates?
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
        googleCertificatesURL: String? = nil,
        clockSkew: TimeInterval = FirebaseTokenVerifier.defaultClockSkew,
        acceptsDevelopmentTokens: Bool = false,
        adminToken: String? = nil,
        adminLabel: String = "admin"
    ) {
        self.adminLabel = adminLabel
        self.firebaseProjectId = firebaseProjectId
        self.googleCertificatesPath = googleCertificatesPath
        self.googleCertificatesURL = googleCertificatesURL
        self.clockSkew = clockSkew
        self.acceptsDevelopmentTokens = acceptsDevelopmentTokens
        self.adminToken = adminToken
    }
}

extension AuthConfiguration {
    /// These settings with Google's certificates fetched from ``googleCertificatesURL`` (unchanged when
    /// there is no URL, or the document was fetched already). `serve` calls it before it builds the
    /// application, so that a URL that gives no usable key set stops the start, not the first sign-in.
    public func fetchingGoogleCertificates(
        within deadline: Duration = .seconds(10), logger: Logger
    ) async throws(AuthConfigurationError) -> AuthConfiguration {
        guard let url = googleCertificatesURL, googleCertificatesPath == nil, fetchedGoogleCertificates == nil else {
            return self
        }
        try GoogleCertificateFetcher.validate(url: url)
        var fetched = self
        fetched.fetchedGoogleCertificates = try await GoogleCertificateFetcher(url: url).fetchAtStart(
            within: deadline, logger: logger)
        return fetched
    }
}
