import Crypto
import Foundation
import Receipts

/// What the App Store Server API client needs: the in-app purchase key and who it belongs to, where
/// Apple's servers are, and how patient to be with them.
public struct AppStoreServerAPIConfiguration: Sendable {
    /// Which of Apple's environments the client asks.
    public enum Environment: String, Sendable, Hashable, CaseIterable {
        /// Production first; on "not found" the sandbox (TestFlight and App Review purchases live
        /// there), as Apple recommends. Notification history and test notifications: production.
        case production
        /// The sandbox only.
        case sandbox
    }

    /// The in-app purchase key (`.p8` from App Store Connect, P-256). Never logged or printed.
    public var signingKey: SigningKey
    /// The key's id (the JWT header's `kid`).
    public var keyId: String
    /// The issuer id of the App Store Connect team (the JWT's `iss`).
    public var issuerId: String
    /// The app's bundle id (the JWT's `bid`).
    public var bundleId: String
    public var environment: Environment
    /// Apple's production server. Tests point it at a local fake.
    public var productionBaseURL: String
    /// Apple's sandbox server.
    public var sandboxBaseURL: String
    /// How long one HTTP request may take, connect to last byte.
    public var requestTimeout: Duration
    /// Attempts per request, the first included, when Apple answers 429 or 5xx or does not answer.
    public var maxAttempts: Int
    /// The longest single wait before a retry. A `Retry-After` further away than this is not waited
    /// for: the request fails as rate limited, naming the time Apple gave.
    public var maxRetryWait: Duration
    /// The first backoff (doubled per attempt) when Apple gives no `Retry-After`.
    public var initialBackoff: Duration
    /// Requests per second per endpoint, enforced here before Apple enforces them.
    public var rateLimits: RateLimits
    /// How long a bearer token is valid (Apple accepts at most 60 minutes).
    public var tokenLifetime: Duration
    /// How long Apple's "not found" for a transaction id (in one environment) is remembered and given
    /// again without asking; zero: never remembered.
    public var notFoundMemory: Duration

    /// Apple's current hosts (recommended since 2026; the older `api.storekit.itunes.apple.com` still answers).
    public static let appleProductionBaseURL = "https://api.storekit.apple.com"
    public static let appleSandboxBaseURL = "https://api.storekit-sandbox.apple.com"

    public init(
        signingKey: SigningKey,
        keyId: String,
        issuerId: String,
        bundleId: String,
        environment: Environment = .production,
        productionBaseURL: String = AppStoreServerAPIConfiguration.appleProductionBaseURL,
        sandboxBaseURL: String = AppStoreServerAPIConfiguration.appleSandboxBaseURL,
        requestTimeout: Duration = .seconds(15),
        maxAttempts: Int = 4,
        maxRetryWait: Duration = .seconds(30),
        initialBackoff: Duration = .milliseconds(500),
        rateLimits: RateLimits = .apple,
        tokenLifetime: Duration = .seconds(20 * 60),
        notFoundMemory: Duration = .seconds(10 * 60)
    ) {
        self.signingKey = signingKey
        self.keyId = keyId
        self.issuerId = issuerId
        self.bundleId = bundleId
        self.environment = environment
        self.productionBaseURL = productionBaseURL
        self.sandboxBaseURL = sandboxBaseURL
        self.requestTimeout = requestTimeout
        self.maxAttempts = maxAttempts
        self.maxRetryWait = maxRetryWait
        self.initialBackoff = initialBackoff
        self.rateLimits = rateLimits
        self.tokenLifetime = tokenLifetime
        self.notFoundMemory = notFoundMemory
    }

    /// Clear errors for settings that cannot work.
    public func validate() throws(AppStoreServerAPIError) {
        func refuse(_ message: String) -> AppStoreServerAPIError { AppStoreServerAPIError(.configuration, message) }
        guard !keyId.isEmpty, keyId.utf8.count <= 64 else { throw refuse("the key id is empty or too long") }
        guard !issuerId.isEmpty, issuerId.utf8.count <= 64 else { throw refuse("the issuer id is empty or too long") }
        guard !bundleId.isEmpty else { throw refuse("the bundle id is empty") }
        for (name, url) in [("production", productionBaseURL), ("sandbox", sandboxBaseURL)] {
            guard let parsed = URL(string: url), let scheme = parsed.scheme, ["http", "https"].contains(scheme),
                parsed.host != nil
            else { throw refuse("the \(name) base URL \(url) is not an http(s) URL") }
        }
        guard requestTimeout > .zero else { throw refuse("the request timeout must be positive") }
        guard (1...10).contains(maxAttempts) else { throw refuse("attempts must be between 1 and 10") }
        guard maxRetryWait >= .zero, initialBackoff >= .zero, notFoundMemory >= .zero else {
            throw refuse("waits cannot be negative")
        }
        guard tokenLifetime >= .seconds(120), tokenLifetime <= .seconds(3600) else {
            throw refuse("the token lifetime must be between 2 and 60 minutes")
        }
    }

    /// The base URL of one of Apple's environments.
    func baseURL(for environment: StoreEnvironment) -> String {
        let url = environment == .sandbox ? sandboxBaseURL : productionBaseURL
        return url.hasSuffix("/") ? String(url.dropLast()) : url
    }

    /// The environments asked for a transaction, in order.
    var transactionEnvironments: [StoreEnvironment] {
        switch environment {
        case .production: [.production, .sandbox]
        case .sandbox: [.sandbox]
        }
    }

    /// The environment asked for notification history and test notifications.
    var primaryEnvironment: StoreEnvironment { environment == .sandbox ? .sandbox : .production }
}

/// The in-app purchase private key. Its `description` never shows the key.
public struct SigningKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    let key: P256.Signing.PrivateKey

    public init(_ key: P256.Signing.PrivateKey) { self.key = key }

    /// The `.p8` file's text: PEM `PRIVATE KEY` (PKCS#8), P-256.
    public init(pem: String) throws(AppStoreServerAPIError) {
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            // The key's bytes stay out of the message.
            throw AppStoreServerAPIError(.configuration, "the in-app purchase key is not a P-256 PKCS#8 PEM key")
        }
    }

    /// Reads a `.p8` file.
    public init(contentsOfFile path: String) throws(AppStoreServerAPIError) {
        guard let data = FileManager.default.contents(atPath: path), data.count <= 16 * 1024 else {
            throw AppStoreServerAPIError(
                .configuration, "cannot read an in-app purchase key of at most 16 KiB from \(path)")
        }
        try self.init(pem: String(decoding: data, as: UTF8.self))
    }

    public var publicKey: P256.Signing.PublicKey { key.publicKey }
    public var description: String { "SigningKey(redacted)" }
    public var debugDescription: String { description }
}
