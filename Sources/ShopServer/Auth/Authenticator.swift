import Foundation
import HTTPTypes

/// Authenticates requests on both surfaces and the admin endpoints: the one object the router needs.
///
/// - SeSAC surface: ``uid(fromSeSACHeaders:)`` reads `idtoken`;
/// - JSON surface: ``uid(fromBearerHeaders:)`` reads `Authorization: Bearer`;
/// - admin: ``requireAdmin(_:)`` compares the bearer token with the configured admin token.
///
/// Every refusal is an ``AuthError``; all but `admin_required` mean "401, sign in again".
public struct Authenticator: Sendable {
    public let identityVerifier: any IdentityVerifier
    public let adminToken: AdminToken?
    /// Google's keys when Firebase verification is configured, for ``reloadCertificates()``.
    public let certificateStore: GoogleCertificateStore?

    public init(
        identityVerifier: any IdentityVerifier, adminToken: AdminToken?, certificateStore: GoogleCertificateStore? = nil
    ) {
        self.identityVerifier = identityVerifier
        self.adminToken = adminToken
        self.certificateStore = certificateStore
    }

    /// Builds the verifier chain from settings: loads the certificate file now (or takes the fetched
    /// document), wraps it in development
    /// mode only when configured, and refuses settings that cannot work (half a Firebase configuration,
    /// no way for anyone to sign in, a short admin token, a file with no usable key).
    public init(
        configuration: AuthConfiguration, now: @escaping @Sendable () -> Date = { Date() }
    ) throws(AuthConfigurationError) {
        let verifier: any IdentityVerifier
        let store: GoogleCertificateStore?
        switch (configuration.googleCertificatesPath, configuration.googleCertificatesURL) {
        case (let path?, nil):
            store = try GoogleCertificateStore(contentsOfFile: path)
        case (nil, let url?):
            try GoogleCertificateFetcher.validate(url: url)
            guard let fetched = configuration.fetchedGoogleCertificates else {
                throw AuthConfigurationError(
                    "Google's certificates were not fetched from \(url) (fetchingGoogleCertificates comes first)")
            }
            store = GoogleCertificateStore(fetched: fetched, from: url)
        case (nil, nil):
            store = nil
        case (_?, _?):
            throw AuthConfigurationError("set the Google certificate file or the Google certificate URL, not both")
        }
        switch (configuration.firebaseProjectId, store) {
        case (let projectId?, let store?):
            let firebase = try FirebaseTokenVerifier(
                projectId: projectId, certificates: store, clockSkew: configuration.clockSkew, now: now)
            verifier =
                configuration.acceptsDevelopmentTokens ? DevelopmentModeVerifier(wrapping: firebase) : firebase
        case (nil, nil):
            guard configuration.acceptsDevelopmentTokens else {
                throw AuthConfigurationError(
                    "no way to sign in: set the Firebase project id and Google's certificates (a file or a URL), or turn on development tokens"
                )
            }
            verifier = DevelopmentModeVerifier(wrapping: nil)
        case (nil, _?):
            throw AuthConfigurationError("Google's certificates are set but no Firebase project id")
        case (_?, nil):
            throw AuthConfigurationError("a Firebase project id is set but no Google certificate file or URL")
        }
        self.init(
            identityVerifier: verifier,
            adminToken: try configuration.adminToken.map { secret throws(AuthConfigurationError) in
                try AdminToken(secret, label: configuration.adminLabel)
            },
            certificateStore: store
        )
    }

    /// The uid proven by the `idtoken` header (SeSAC surface).
    public func uid(fromSeSACHeaders headers: HTTPFields) throws(AuthError) -> String {
        try identityVerifier.uid(forToken: AuthHeaders.sesacToken(in: headers))
    }

    /// The uid proven by `Authorization: Bearer <token>` (JSON surface).
    public func uid(fromBearerHeaders headers: HTTPFields) throws(AuthError) -> String {
        try identityVerifier.uid(forToken: AuthHeaders.bearerToken(in: headers))
    }

    /// Passes when `Authorization: Bearer` carries the configured admin token; `admin_required` otherwise,
    /// and always when no admin token is configured.
    /// - Returns: the admin token's label, the actor of what the request does.
    @discardableResult
    public func requireAdmin(_ headers: HTTPFields) throws(AuthError) -> String {
        guard let adminToken else {
            throw AuthError(.adminRequired, "admin access is not configured on this server")
        }
        let presented: String
        do {
            presented = try AuthHeaders.bearerToken(in: headers)
        } catch {
            throw AuthError(.adminRequired, "admin endpoints need the admin bearer token")
        }
        guard adminToken.matches(presented) else {
            throw AuthError(.adminRequired, "the bearer token is not the admin token")
        }
        return adminToken.label
    }

    /// Re-reads the Google certificate file and swaps in its keys (see ``GoogleCertificateStore/reload()``).
    /// - Returns: the key set now in use; `nil` when Firebase verification is not configured.
    @discardableResult
    public func reloadCertificates() throws(AuthConfigurationError) -> GoogleCertificates? {
        try certificateStore?.reload()
    }
}
