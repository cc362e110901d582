import Foundation

/// An endpoint's URL, checked: `https://` with a host, or `http://` to a loopback address (a receiver
/// on the same machine, for development and tests: nothing leaves the machine unencrypted). No user
/// name or password in it, no fragment, at most 2048 bytes.
public struct WebhookURL: Sendable, Hashable, CustomStringConvertible {
    public let text: String
    public let host: String

    public init(_ text: String, destinations: WebhookDestinations = .publicOnly) throws(WebhookError) {
        guard (8...2048).contains(text.utf8.count), !text.unicodeScalars.contains(where: Self.refused) else {
            throw WebhookError(.invalidInput, "the URL must be 8 to 2048 printable ASCII characters")
        }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty
        else {
            throw WebhookError(.invalidInput, "\(text.prefix(100).debugDescription) is not an absolute URL with a host")
        }
        guard components.user == nil, components.password == nil else {
            throw WebhookError(.invalidInput, "the URL must not carry a user name or password")
        }
        guard components.fragment == nil else { throw WebhookError(.invalidInput, "the URL must not have a fragment") }
        switch scheme {
        case "https":
            break
        case "http" where Self.isLoopback(host):
            break
        case "http":
            throw WebhookError(
                .invalidInput, "webhook URLs must be https (plain http only to a loopback address such as 127.0.0.1)")
        default:
            throw WebhookError(.invalidInput, "webhook URLs must be https, got scheme \(scheme.prefix(20))")
        }
        self.text = text
        self.host = host
    }

    public var description: String { text }

    /// `localhost`, 127.0.0.0/8 or ::1.
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare.lowercased() == "localhost" || bare == "::1" { return true }
        let parts = bare.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "127" else { return false }
        return parts.allSatisfy { part in
            part.count <= 3 && !part.isEmpty && part.allSatisfy(\.isASCII) && UInt8(part) != nil
        }
    }

    private static func refused(_ scalar: Unicode.Scalar) -> Bool {
        !scalar.isASCII || scalar.value < 0x21 || scalar.value == 0x7F
    }
}
