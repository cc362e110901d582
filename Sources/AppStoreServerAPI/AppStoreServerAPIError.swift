import Foundation
import Receipts

/// The one error type of the App Store Server API client: a ``code`` saying what kind of failure it is,
/// Apple's own `errorCode` and HTTP status when Apple answered, and a message safe to log (it never
/// contains the key or a bearer token).
public struct AppStoreServerAPIError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong. Extensible: compare against the static members.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A setting that cannot work (key, ids, URLs).
        public static let configuration = Code(rawValue: "configuration")
        /// An id given to the client cannot be sent (empty, too long, not printable ASCII).
        public static let invalidInput = Code(rawValue: "invalid_input")
        /// Apple answered with an error status (``AppStoreServerAPIError/apiErrorCode`` has its code when
        /// it sent `{errorCode, errorMessage}`).
        public static let apiError = Code(rawValue: "api_error")
        /// Apple asked us to wait (429) longer than we wait, or kept asking until the attempts ran out.
        public static let rateLimited = Code(rawValue: "rate_limited")
        /// No answer within the request timeout, after every attempt.
        public static let timeout = Code(rawValue: "timeout")
        /// The connection failed (refused, reset, TLS), after every attempt.
        public static let transport = Code(rawValue: "transport")
        /// Apple answered 2xx with a body that is not what the endpoint returns.
        public static let unexpectedResponse = Code(rawValue: "unexpected_response")
        /// A signed payload in the answer did not verify: nothing of the answer is used.
        public static let unverifiedPayload = Code(rawValue: "unverified_payload")
    }

    /// Apple's `errorCode` values the client acts on.
    public enum APIErrorCode {
        /// The transaction id is not found (in this environment).
        public static let transactionIdNotFound = 4_040_010
        /// The transaction id is not valid.
        public static let invalidTransactionId = 4_000_006
        /// Too many requests.
        public static let rateLimitExceeded = 4_290_000
        /// The test notification token is not found.
        public static let testNotificationNotFound = 4_040_008
    }

    public var code: Code
    public var message: String
    /// The HTTP status of Apple's answer, when there was one.
    public var httpStatus: Int?
    /// Apple's `errorCode` (e.g. 4040010), when Apple sent one.
    public var apiErrorCode: Int?
    /// For ``Code/unverifiedPayload``: why the verifier refused it.
    public var refusal: ReceiptRefusal?
    /// For ``Code/rateLimited``: when Apple said to come back.
    public var retryAt: Date?

    public init(
        _ code: Code, _ message: String, httpStatus: Int? = nil, apiErrorCode: Int? = nil,
        refusal: ReceiptRefusal? = nil, retryAt: Date? = nil
    ) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
        self.apiErrorCode = apiErrorCode
        self.refusal = refusal
        self.retryAt = retryAt
    }

    /// Apple does not know the transaction (or order) in the environment asked: 4040010, or a bare 404.
    public var isNotFound: Bool {
        code == .apiError
            && (apiErrorCode == APIErrorCode.transactionIdNotFound || (apiErrorCode == nil && httpStatus == 404))
    }

    public var description: String {
        var text = "\(code.rawValue): \(message)"
        if let httpStatus { text += " (HTTP \(httpStatus)" + (apiErrorCode.map { ", errorCode \($0))" } ?? ")") }
        return text
    }
}
