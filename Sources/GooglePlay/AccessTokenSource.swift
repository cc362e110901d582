import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import _CryptoExtras

/// Access tokens for the Google Play Developer API, by OAuth 2.0's JWT bearer grant (RFC 7523): an RS256
/// JWT signed with the service account's key (`iss` the account, `scope` androidpublisher, `aud` the
/// token endpoint, an hour's life) is posted to the token endpoint, whose `access_token` is then reused
/// until a minute before its `expires_in` runs out.
actor AccessTokenSource {
    private let credential: ServiceAccountCredential
    private let tokenURL: String
    private let httpClient: HTTPClient
    private let now: @Sendable () -> Date
    private var cached: (token: String, expires: Date)?
    /// A token is replaced this long before it expires, so none expires in flight.
    static let renewalMargin: TimeInterval = 60
    /// The assertion's life (Google accepts at most an hour).
    static let assertionLifetime: Int64 = 3600

    init(
        credential: ServiceAccountCredential, tokenURL: String, httpClient: HTTPClient,
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.credential = credential
        self.tokenURL = tokenURL
        self.httpClient = httpClient
        self.now = now
    }

    /// A valid access token: the cached one, or a fresh one from the token endpoint within `timeout`.
    func token(timeout: Duration) async throws -> String {
        let now = now()
        if let cached, cached.expires.timeIntervalSince(now) > Self.renewalMargin { return cached.token }
        let assertion = try Self.assertion(credential: credential, audience: tokenURL, now: now)
        var request = HTTPClientRequest(url: tokenURL)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        let form =
            "grant_type=" + Self.formEncode("urn:ietf:params:oauth:grant-type:jwt-bearer") + "&assertion="
            + Self.formEncode(assertion)
        request.body = .bytes(ByteBuffer(string: form))
        let status: Int
        let body: Data
        do {
            let response = try await httpClient.execute(
                request, deadline: .now() + .nanoseconds(Int64(timeout.seconds * 1e9)), logger: nil)
            status = Int(response.status.code)
            body = Data(try await response.body.collect(upTo: 64 * 1024).readableBytesView)
        } catch let error as HTTPClientError
            where [.deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout].contains(error)
        {
            throw GooglePlayError(.timeout, "the token endpoint did not answer in time")
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            try Task.checkCancellation()
            throw GooglePlayError(.transport, "the token endpoint: \(error)")
        }
        guard (200..<300).contains(status) else {
            let refusal = try? JSONDecoder().decode(Wire.TokenError.self, from: body)
            let message = [refusal?.error, refusal?.errorDescription].compactMap { $0 }.joined(separator: ": ")
            // 5xx and 429 are Google's trouble, not a refusal of our key.
            let code: GooglePlayError.Code =
                status == 429 ? .rateLimited : status >= 500 ? .apiError : .authentication
            throw GooglePlayError(
                code,
                "the token endpoint refused the assertion: \(message.isEmpty ? "HTTP \(status)" : String(message.prefix(200)))",
                httpStatus: status)
        }
        guard let answer = try? JSONDecoder().decode(Wire.TokenResponse.self, from: body), !answer.accessToken.isEmpty,
            answer.expiresIn > 0
        else {
            throw GooglePlayError(
                .unexpectedResponse, "the token endpoint answered \(status) with a body of another shape")
        }
        cached = (answer.accessToken, now.addingTimeInterval(TimeInterval(answer.expiresIn)))
        return answer.accessToken
    }

    /// Forgets the cached token (Google answered 401 to it).
    func discard() { cached = nil }

    /// The signed JWT assertion: `{"alg":"RS256","typ":"JWT","kid"}` . `{iss, scope, aud, iat, exp}`.
    static func assertion(
        credential: ServiceAccountCredential, audience: String, now: Date
    ) throws(GooglePlayError)
        -> String
    {
        var header: [String: String] = ["alg": "RS256", "typ": "JWT"]
        if let kid = credential.privateKeyId { header["kid"] = kid }
        let issued = Int64(now.timeIntervalSince1970)
        let claims: [String: Any] = [
            "iss": credential.clientEmail, "scope": GooglePlayConfiguration.scope, "aud": audience,
            "iat": issued, "exp": issued + assertionLifetime,
        ]
        do {
            let headerJSON = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
            let claimsJSON = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
            let signingInput = base64URL(headerJSON) + "." + base64URL(claimsJSON)
            let signature = try credential.key.signature(
                for: SHA256.hash(data: Data(signingInput.utf8)), padding: .insecurePKCS1v1_5)
            return signingInput + "." + base64URL(signature.rawRepresentation)
        } catch {
            throw GooglePlayError(.configuration, "could not sign the service account's assertion")
        }
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func formEncode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }
}

extension Duration {
    /// The duration in seconds, fractions included.
    var seconds: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
