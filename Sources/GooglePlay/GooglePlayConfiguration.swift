import Foundation

/// What the Google Play client needs: the app's package, the service account that may call the Google
/// Play Developer API for it, where Google's servers are, and how patient to be with them.
public struct GooglePlayConfiguration: Sendable {
    /// The app's package name (`com.example.app`): the only package whose purchases are verified.
    public var packageName: String
    public var credential: ServiceAccountCredential
    /// The Google Play Developer API's root. Tests point it at a local fake.
    public var apiBaseURL: String
    /// Where assertions are exchanged for access tokens; the key file's `token_uri` by default.
    public var tokenURL: String
    /// How long one HTTP request may take, connect to last byte.
    public var requestTimeout: Duration
    /// Attempts per call, the first included, when Google answers 429 or 5xx or does not answer.
    public var maxAttempts: Int
    /// The longest single wait before a retry; a `Retry-After` further away fails the call as rate limited.
    public var maxRetryWait: Duration
    /// The first backoff (doubled per attempt) when Google gives no `Retry-After`.
    public var initialBackoff: Duration
    /// Requests per second to the Developer API, enforced here before Google's quota is.
    public var requestsPerSecond: Double
    /// The share of that rate (whole requests, rounded down) a call inside a customer's request leaves
    /// to background work (sync, acknowledgements).
    public var backgroundShare: Double

    public static let googleAPIBaseURL = "https://androidpublisher.googleapis.com"
    /// The OAuth scope of the Google Play Developer API.
    public static let scope = "https://www.googleapis.com/auth/androidpublisher"

    public init(
        packageName: String,
        credential: ServiceAccountCredential,
        apiBaseURL: String = GooglePlayConfiguration.googleAPIBaseURL,
        tokenURL: String? = nil,
        requestTimeout: Duration = .seconds(15),
        maxAttempts: Int = 4,
        maxRetryWait: Duration = .seconds(30),
        initialBackoff: Duration = .milliseconds(500),
        requestsPerSecond: Double = 20,
        backgroundShare: Double = 0.2
    ) {
        self.packageName = packageName
        self.credential = credential
        self.apiBaseURL = apiBaseURL
        self.tokenURL = tokenURL ?? credential.tokenURI
        self.requestTimeout = requestTimeout
        self.maxAttempts = maxAttempts
        self.maxRetryWait = maxRetryWait
        self.initialBackoff = initialBackoff
        self.requestsPerSecond = requestsPerSecond
        self.backgroundShare = backgroundShare
    }

    /// Clear errors for settings that cannot work.
    public func validate() throws(GooglePlayError) {
        func refuse(_ message: String) -> GooglePlayError { GooglePlayError(.configuration, message) }
        guard Self.isPackageName(packageName) else {
            throw refuse("the package name \(packageName.prefix(100)) is not a Java package name")
        }
        for (name, url) in [("API", apiBaseURL), ("token", tokenURL)] {
            guard let parsed = URL(string: url), let scheme = parsed.scheme, ["http", "https"].contains(scheme),
                parsed.host != nil
            else { throw refuse("the \(name) URL \(url) is not an http(s) URL") }
        }
        guard requestTimeout > .zero else { throw refuse("the request timeout must be positive") }
        guard (1...10).contains(maxAttempts) else { throw refuse("attempts must be between 1 and 10") }
        guard maxRetryWait >= .zero, initialBackoff >= .zero else { throw refuse("waits cannot be negative") }
        guard requestsPerSecond > 0 else { throw refuse("the request rate must be positive") }
        guard (0...0.9).contains(backgroundShare) else { throw refuse("the background share must be 0–0.9") }
    }

    /// `com.example.app`: dot-separated segments of letters, digits and underscores, each starting with a letter.
    public static func isPackageName(_ name: String) -> Bool {
        guard (3...255).contains(name.utf8.count) else { return false }
        let segments = name.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count >= 2 else { return false }
        return segments.allSatisfy { segment in
            guard let first = segment.unicodeScalars.first, first.isASCII, CharacterSet.letters.contains(first) else {
                return false
            }
            return segment.unicodeScalars.allSatisfy {
                $0.isASCII && ($0 == "_" || CharacterSet.alphanumerics.contains($0))
            }
        }
    }

    var trimmedAPIBaseURL: String { apiBaseURL.hasSuffix("/") ? String(apiBaseURL.dropLast()) : apiBaseURL }
}
