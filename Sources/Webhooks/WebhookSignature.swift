import Crypto
import Foundation

/// The `ShopLedger-Signature` header, the scheme Stripe uses: `t=<unix seconds>,v1=<hex HMAC-SHA256 of
/// "<t>.<body>" keyed with the endpoint's secret>`. The timestamp is signed with the body, so a receiver
/// that rejects old timestamps rejects replayed requests too.
public enum WebhookSignature {
    public static let headerName = "ShopLedger-Signature"

    /// The header's value for `body` sent at `timestamp` (unix seconds).
    public static func header(body: some DataProtocol, secret: String, timestamp: Int64) -> String {
        "t=\(timestamp),v1=\(hex(body: body, secret: secret, timestamp: timestamp))"
    }

    /// The lowercase hex HMAC-SHA256 of `"<timestamp>.<body>"`.
    public static func hex(body: some DataProtocol, secret: String, timestamp: Int64) -> String {
        var mac = HMAC<SHA256>(key: SymmetricKey(data: Data(secret.utf8)))
        mac.update(data: Data("\(timestamp).".utf8))
        mac.update(data: body)
        return mac.finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// What a receiver does: whether `header` signs `body` with `secret` at a time within `tolerance`
    /// seconds of `now` (any of several `v1` values may match, as during a secret's rotation). The
    /// comparison takes the same time whatever the bytes.
    public static func verify(
        header: String, body: some DataProtocol, secret: String, now: Int64, tolerance: Int64 = 300
    ) -> Bool {
        var timestamp: Int64?
        var signatures: [String] = []
        for item in header.split(separator: ",") {
            let pair = item.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            switch pair[0].trimmingCharacters(in: .whitespaces) {
            case "t": timestamp = Int64(pair[1])
            case "v1": signatures.append(String(pair[1]))
            default: continue
            }
        }
        guard let timestamp, !signatures.isEmpty, abs(now - timestamp) <= tolerance else { return false }
        let expected = Array(hex(body: body, secret: secret, timestamp: timestamp).utf8)
        return signatures.contains { candidate in
            let bytes = Array(candidate.utf8)
            guard bytes.count == expected.count else { return false }
            var difference: UInt8 = 0
            for (a, b) in zip(bytes, expected) { difference |= a ^ b }
            return difference == 0
        }
    }
}
