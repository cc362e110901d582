/// Why a request was not authenticated: the one error type of the auth component.
///
/// A machine-readable ``code`` (a stable snake_case string for clients, logs and metrics) plus a human
/// ``message``. Neither ever contains the presented token, nor any other value taken from it (the `kid`,
/// `iss`, `aud` or `sub` a caller sent), so ``description`` is safe to log and to send back.
public struct AuthError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable code. Extensible: compare against the static members.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// No token was presented (no header, an empty header, or `Bearer` with nothing after it).
        public static let missingToken = Code(rawValue: "missing_token")
        /// Not a JWS compact token of the expected shape: segments, size, base64url, JSON, claim types.
        /// Also what a `dev:` token gets when development mode is off.
        public static let malformedToken = Code(rawValue: "malformed_token")
        /// The header `alg` is not `RS256` (for example `none` or `HS256`).
        public static let unsupportedAlgorithm = Code(rawValue: "unsupported_algorithm")
        /// The header `kid` is missing or names no loaded Google certificate.
        public static let unknownKey = Code(rawValue: "unknown_key")
        /// The certificate named by `kid` is loaded but outside its validity period now
        /// (usually a stale certificate file: the operator's rotation job has stopped).
        public static let keyNotValid = Code(rawValue: "key_not_valid")
        /// The RS256 signature does not verify with the named certificate's key.
        public static let invalidSignature = Code(rawValue: "invalid_signature")
        /// `exp` has passed (beyond the allowed clock skew).
        public static let expired = Code(rawValue: "expired")
        /// `iat` or `auth_time` is in the future (beyond the allowed clock skew).
        public static let notYetValid = Code(rawValue: "not_yet_valid")
        /// `aud` is not the configured Firebase project.
        public static let wrongAudience = Code(rawValue: "wrong_audience")
        /// `iss` is not `https://securetoken.google.com/<project>`.
        public static let wrongIssuer = Code(rawValue: "wrong_issuer")
        /// `sub` is missing, empty, or longer than 128 characters (or a `dev:` uid of the wrong shape).
        public static let invalidSubject = Code(rawValue: "invalid_subject")
        /// An admin endpoint without the configured admin token (or with no admin token configured).
        public static let adminRequired = Code(rawValue: "admin_required")
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
