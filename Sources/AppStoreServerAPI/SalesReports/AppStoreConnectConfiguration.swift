import Foundation

/// What the App Store Connect API client needs to download Sales and Trends reports: a team API key
/// with the Sales (or Finance, Admin) role, who issued it, the vendor number the reports belong to,
/// and where Apple's server is.
///
/// It is not the in-app purchase key of ``AppStoreServerAPIConfiguration``: App Store Connect API keys
/// are made under Users and Access, Integrations, and their tokens carry no bundle id.
public struct AppStoreConnectConfiguration: Sendable {
    /// The API key (`.p8`, P-256). Never logged or printed.
    public var signingKey: SigningKey
    /// The key's id (the JWT header's `kid`).
    public var keyId: String
    /// The issuer id of the App Store Connect team (the JWT's `iss`).
    public var issuerId: String
    /// Apple's vendor number of the account (Payments and Financial Reports), digits.
    public var vendorNumber: String
    /// Apple's server. Tests point it at a local fake.
    public var baseURL: String
    /// How long one HTTP request may take, connect to last byte.
    public var requestTimeout: Duration
    /// Attempts per download, the first included, when Apple answers 5xx or does not answer. A 429 is
    /// not retried: Apple's App Store Connect limits are per hour, longer than a command should wait.
    public var maxAttempts: Int
    /// The first backoff before a retry, doubled per attempt.
    public var initialBackoff: Duration
    /// How long a token is valid: Apple refuses App Store Connect tokens that live over 20 minutes.
    public var tokenLifetime: Duration

    public static let appleBaseURL = "https://api.appstoreconnect.apple.com"

    public init(
        signingKey: SigningKey,
        keyId: String,
        issuerId: String,
        vendorNumber: String,
        baseURL: String = AppStoreConnectConfiguration.appleBaseURL,
        requestTimeout: Duration = .seconds(60),
        maxAttempts: Int = 3,
        initialBackoff: Duration = .seconds(2),
        tokenLifetime: Duration = .seconds(15 * 60)
    ) {
        self.signingKey = signingKey
        self.keyId = keyId
        self.issuerId = issuerId
        self.vendorNumber = vendorNumber
        self.baseURL = baseURL
        self.requestTimeout = requestTimeout
        self.maxAttempts = maxAttempts
        self.initialBackoff = initialBackoff
        self.tokenLifetime = tokenLifetime
    }

    /// Clear errors for settings that cannot work.
    public func validate() throws(AppStoreServerAPIError) {
        func refuse(_ message: String) -> AppStoreServerAPIError { AppStoreServerAPIError(.configuration, message) }
        guard !keyId.isEmpty, keyId.utf8.count <= 64 else { throw refuse("the key id is empty or too long") }
        guard !issuerId.isEmpty, issuerId.utf8.count <= 64 else { throw refuse("the issuer id is empty or too long") }
        guard (1...20).contains(vendorNumber.utf8.count), vendorNumber.utf8.allSatisfy({ (0x30...0x39).contains($0) })
        else { throw refuse("the vendor number must be 1 to 20 digits") }
        guard let parsed = URL(string: baseURL), let scheme = parsed.scheme, ["http", "https"].contains(scheme),
            parsed.host != nil
        else { throw refuse("the App Store Connect base URL \(baseURL) is not an http(s) URL") }
        guard requestTimeout > .zero else { throw refuse("the request timeout must be positive") }
        guard (1...10).contains(maxAttempts) else { throw refuse("attempts must be between 1 and 10") }
        guard initialBackoff >= .zero else { throw refuse("waits cannot be negative") }
        guard tokenLifetime >= .seconds(120), tokenLifetime <= .seconds(20 * 60) else {
            throw refuse("the token lifetime must be between 2 and 20 minutes")
        }
    }
}
