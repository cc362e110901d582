import Foundation

/// The one error type of the Google Play client: a ``code`` saying what kind of failure it is, Google's
/// HTTP status and `error.status` when Google answered, and a message safe to log (never the private key
/// or a token).
public struct GooglePlayError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong. Extensible: compare against the static members.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A setting that cannot work (key file, package name, URLs).
        public static let configuration = Code(rawValue: "configuration")
        /// A value given to the client cannot be sent (empty, too long, not URL-safe).
        public static let invalidInput = Code(rawValue: "invalid_input")
        /// The token endpoint refused the service account's assertion.
        public static let authentication = Code(rawValue: "authentication")
        /// Google answered with an error status (`{"error": {code, message, status}}`).
        public static let apiError = Code(rawValue: "api_error")
        /// Google asked us to wait (429) longer than we wait, or kept asking until the attempts ran out.
        public static let rateLimited = Code(rawValue: "rate_limited")
        /// No answer within the request timeout, after every attempt.
        public static let timeout = Code(rawValue: "timeout")
        /// The connection failed (refused, reset, TLS), after every attempt.
        public static let transport = Code(rawValue: "transport")
        /// Google answered 2xx with a body that is not what the endpoint returns.
        public static let unexpectedResponse = Code(rawValue: "unexpected_response")
    }

    public var code: Code
    public var message: String
    /// The HTTP status of Google's answer, when there was one.
    public var httpStatus: Int?
    /// Google's `error.status` (`NOT_FOUND`, `PERMISSION_DENIED`, `RESOURCE_EXHAUSTED`, ...), when sent.
    public var apiStatus: String?
    /// For ``Code/rateLimited``: when Google said to come back.
    public var retryAt: Date?

    public init(
        _ code: Code, _ message: String, httpStatus: Int? = nil, apiStatus: String? = nil, retryAt: Date? = nil
    ) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
        self.apiStatus = apiStatus
        self.retryAt = retryAt
    }

    /// Google does not know the purchase token (or product): 404, or 400 `INVALID_ARGUMENT` about the token.
    public var isNotFound: Bool { code == .apiError && httpStatus == 404 }

    /// Google could not be reached or did not answer usefully in time: the purchase is neither proven nor
    /// refused (the caller answers "try again", never "refused").
    public var isUnavailable: Bool {
        [.timeout, .transport, .rateLimited].contains(code) || (code == .apiError && (httpStatus ?? 0) >= 500)
    }

    public var description: String {
        var text = "\(code.rawValue): \(message)"
        if let httpStatus { text += " (HTTP \(httpStatus)" + (apiStatus.map { ", \($0))" } ?? ")") }
        return text
    }
}
