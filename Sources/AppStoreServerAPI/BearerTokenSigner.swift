import Crypto
import Foundation

/// Signs the App Store Server API's bearer tokens (ES256 JWT with the in-app purchase key) and reuses
/// each until shortly before it expires, so a busy client signs a few per hour, not one per request.
/// The App Store Connect API's tokens are the same but for the `bid` claim, which they do not carry
/// (a `nil` bundle id).
actor BearerTokenSigner {
    private let key: SigningKey
    private let keyId: String
    private let issuerId: String
    private let bundleId: String?
    private let lifetime: TimeInterval
    /// A token is replaced this long before its `exp`, so none expires in flight.
    private let renewalMargin: TimeInterval
    private let now: @Sendable () -> Date
    private var cached: (token: String, expires: Date)?

    init(
        key: SigningKey, keyId: String, issuerId: String, bundleId: String?, lifetime: Duration,
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.key = key
        self.keyId = keyId
        self.issuerId = issuerId
        self.bundleId = bundleId
        self.lifetime = lifetime.seconds
        self.renewalMargin = min(120, self.lifetime / 4)
        self.now = now
    }

    /// A valid token: the cached one, or a fresh one.
    func token() throws(AppStoreServerAPIError) -> String {
        let now = now()
        if let cached, cached.expires.timeIntervalSince(now) > renewalMargin { return cached.token }
        let issued = Int64(now.timeIntervalSince1970)
        let expires = issued + Int64(lifetime)
        let token = try sign(issuedAt: issued, expiresAt: expires)
        cached = (token, Date(timeIntervalSince1970: TimeInterval(expires)))
        return token
    }

    /// Forgets the cached token (Apple answered 401 to it).
    func discard() { cached = nil }

    private func sign(issuedAt: Int64, expiresAt: Int64) throws(AppStoreServerAPIError) -> String {
        let header: [String: String] = ["alg": "ES256", "kid": keyId, "typ": "JWT"]
        var claims: [String: Any] = [
            "iss": issuerId, "iat": issuedAt, "exp": expiresAt, "aud": "appstoreconnect-v1",
        ]
        if let bundleId { claims["bid"] = bundleId }
        do {
            let headerJSON = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
            let claimsJSON = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
            let signingInput = Self.base64URL(headerJSON) + "." + Self.base64URL(claimsJSON)
            // ES256 in a JWS is raw r||s (RFC 7518 §3.4), not DER.
            let signature = try key.key.signature(for: Data(signingInput.utf8))
            return signingInput + "." + Self.base64URL(signature.rawRepresentation)
        } catch {
            throw AppStoreServerAPIError(.configuration, "could not sign a bearer token")
        }
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

extension Duration {
    /// The duration in seconds, fractions included.
    var seconds: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
