/// A fuzz target: one parser or verifier the server feeds with untrusted bytes. The raw value names the
/// corpus directory (`Fuzz/corpus/<name>`) and is what `shopledger-fuzz` takes as its first argument.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// Classic app receipts: `verifyAppReceipt`, `proveEach`, `prove` and `AppReceipt(unverifiedBase64:)`.
    /// Corpus files are the DER/BER PKCS#7 bytes; the harness base64-encodes them as clients do.
    case classicReceipt = "classic-receipt"
    /// StoreKit 2 signed transactions: `verifyTransaction`, and `prove` of the same text. JWS files
    /// (``JWSInput``).
    case signedTransaction = "signed-transaction"
    /// App Store Server Notifications V2 `signedPayload`s: `verifyNotification`. JWS files (``JWSInput``).
    case notification
    /// Stub receipts and stub notifications (text), with and without a stub secret.
    case stubReceipt = "stub-receipt"
    /// Firebase ID tokens: `FirebaseTokenVerifier.verify`. JWS files (``JWSInput``).
    case firebaseToken = "firebase-token"
    /// `application/x-www-form-urlencoded` bodies: `FormFields`, `requiredInteger`, the sign-up form.
    case formBody = "form-body"
    /// JSON bodies: every request body of the JSON surface, the `signedTransaction` fast path, the profile.
    case jsonBody = "json-body"

    /// The longest input worth trying (libFuzzer's `-max_len`): a classic receipt of a few purchases is
    /// about 4 KiB of DER, a notification with its nested signed transaction about 5 KiB.
    public var maxLength: Int {
        switch self {
        case .classicReceipt, .signedTransaction, .notification: 16 * 1024
        case .firebaseToken: 8 * 1024
        case .stubReceipt, .formBody, .jsonBody: 4 * 1024
        }
    }
}
