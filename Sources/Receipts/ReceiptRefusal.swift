/// Why a receipt, signed transaction or notification was not accepted as proof of a purchase.
///
/// The one error type of the `Receipts` module: a machine-readable ``reason`` (a stable snake_case code for
/// clients, logs and metrics) plus a human ``message`` meant for support staff. The message never contains
/// secrets; it may quote identifiers taken from the (possibly forged) input.
public struct ReceiptRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable refusal code. Extensible: compare against the static members.
    public struct Reason: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Not decodable: wrong shape, bad base64, bad JSON, missing required fields, or over the size limit.
        public static let malformed = Reason(rawValue: "malformed")
        /// A classic app receipt that does not decode: not base64, not a BER PKCS#7 SignedData with the
        /// receipt embedded, receipt attributes that are not DER, missing fields, or over the size limit.
        public static let malformedReceipt = Reason(rawValue: "malformed_receipt")
        /// The JWS `alg` is not ES256 (for example `none`, `HS256`, `RS256`).
        public static let unsupportedAlgorithm = Reason(rawValue: "unsupported_algorithm")
        /// The `x5c` chain (or a classic receipt's certificates) is not three certificates that chain to a
        /// configured root with Apple's OIDs, valid at the payload's `signedDate` (the receipt's creation date).
        public static let untrustedChain = Reason(rawValue: "untrusted_chain")
        /// The signature (ES256 for App Store data, RSA with SHA-256 for classic receipts, HMAC-SHA256 for
        /// stubs) does not verify, or is missing.
        public static let invalidSignature = Reason(rawValue: "invalid_signature")
        /// A classic receipt signed with SHA-1 (or MD5), or chained through a certificate signed so: Apple's
        /// SHA-1 WWDR intermediate expired on 2025-01-24 and the App Store issues a fresh receipt instead.
        public static let weakSignatureAlgorithm = Reason(rawValue: "weak_signature_algorithm")
        /// Authentic, but for another app.
        public static let wrongBundleId = Reason(rawValue: "wrong_bundle_id")
        /// Authentic, but from an environment this verifier does not accept.
        public static let wrongEnvironment = Reason(rawValue: "wrong_environment")
        /// Authentic, but the product type is not one the shop sells.
        public static let unsupportedProductType = Reason(rawValue: "unsupported_product_type")
        /// The receipt does not contain (or does not single out) the requested product.
        public static let productNotInReceipt = Reason(rawValue: "product_not_in_receipt")
        /// A stub receipt reached a verifier that does not accept stubs (production).
        public static let stubNotAccepted = Reason(rawValue: "stub_not_accepted")
        /// Not a verdict: the verification stopped at one of its steps because its task was cancelled
        /// (the request's deadline passed, the server is stopping). Nothing is known about the proof.
        public static let cancelled = Reason(rawValue: "cancelled")

        /// Every verdict above (not ``cancelled``, which is none): what a refusal can say.
        public static let verdicts: [Reason] = [
            .malformed, .malformedReceipt, .unsupportedAlgorithm, .untrustedChain, .invalidSignature,
            .weakSignatureAlgorithm, .wrongBundleId, .wrongEnvironment, .unsupportedProductType,
            .productNotInReceipt, .stubNotAccepted,
        ]
    }

    public var reason: Reason
    public var message: String

    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { "\(reason.rawValue): \(message)" }

    /// Stops a verification between its steps once its task is cancelled, so that work nobody waits
    /// for any more does not run on.
    static func checkCancellation() throws(ReceiptRefusal) {
        if Task.isCancelled {
            throw ReceiptRefusal(.cancelled, "the verification was cancelled before it finished")
        }
    }
}
