import Crypto
import Foundation

/// The line format shared by stub receipts and stub notifications: a magic first line, `key: value`
/// lines of printable ASCII, and an optional last line `signature: hmac-sha256:<hex>`.
enum StubText {
    static let maxValueLength = 200

    /// The non-empty lines of `text` after its magic line, trimmed. LF or CRLF line ends.
    static func lines(
        _ text: String, magicLine: String, maxBytes: Int, what: String
    ) throws(ReceiptRefusal)
        -> [String]
    {
        guard text.utf8.count <= maxBytes else {
            throw ReceiptRefusal(.malformed, "\(what) is over the \(maxBytes)-byte limit")
        }
        // Split on LF bytes: in Swift "\r\n" is one Character, so a Character split would miss it.
        let lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            .map {
                String(decoding: $0, as: UTF8.self).trimmingCharacters(
                    in: .whitespaces.union(.init(charactersIn: "\r")))
            }
            .filter { !$0.isEmpty }
        guard lines.first == magicLine else { throw ReceiptRefusal(.malformed, "\(what) must start with \(magicLine)") }
        return Array(lines.dropFirst())
    }

    /// Splits `key: value`; the value must be 1–200 printable ASCII characters.
    static func keyValue(_ line: Substring, what: String) throws(ReceiptRefusal) -> (String, String) {
        guard let colon = line.firstIndex(of: ":") else {
            throw ReceiptRefusal(.malformed, "\(what) line is not 'key: value'")
        }
        let key = String(line[..<colon]).trimmingCharacters(in: .whitespaces)
        let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
        guard !key.isEmpty, !value.isEmpty, value.utf8.count <= maxValueLength,
            value.utf8.allSatisfy({ (0x20...0x7E).contains($0) })
        else {
            throw ReceiptRefusal(
                .malformed, "\(what) value of \(key.prefix(40)) must be 1–\(maxValueLength) printable ASCII characters")
        }
        return (key, value)
    }

    /// The MAC of a `signature: hmac-sha256:<64 hex digits>` value.
    static func signature(_ value: String) throws(ReceiptRefusal) -> [UInt8] {
        guard value.hasPrefix("hmac-sha256:"), let mac = Hex.decode(value.dropFirst("hmac-sha256:".count)),
            mac.count == 32
        else { throw ReceiptRefusal(.malformed, "signature must be hmac-sha256:<64 hex digits>") }
        return mac
    }

    static func milliseconds(_ text: String, _ name: String) throws(ReceiptRefusal) -> Int64 {
        guard let value = Int64(text), value >= 0 else {
            throw ReceiptRefusal(.malformed, "\(name) must be milliseconds since 1970")
        }
        return value
    }

    static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// The hex HMAC-SHA256 of `canonicalText` keyed with `secret`.
    static func sign(_ canonicalText: String, secret: String) -> String {
        let key = SymmetricKey(data: Array(secret.utf8))
        return Hex.encode(HMAC<SHA256>.authenticationCode(for: Array(canonicalText.utf8), using: key))
    }

    /// Checks the signature against the configured secret: with a secret, a missing or wrong signature is
    /// `invalid_signature`; without one, nothing is checked (development only).
    static func checkSignature(
        _ signature: [UInt8]?, of canonicalText: String, secret: String?, what: String
    ) throws(ReceiptRefusal) {
        guard let secret else { return }
        guard let signature else {
            throw ReceiptRefusal(.invalidSignature, "\(what) is unsigned, but stubs must be signed here")
        }
        let key = SymmetricKey(data: Array(secret.utf8))
        guard HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: Array(canonicalText.utf8), using: key)
        else { throw ReceiptRefusal(.invalidSignature, "\(what) signature does not verify with the configured secret") }
    }
}
