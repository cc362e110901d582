import Foundation

/// An endpoint's URL, checked when the endpoint is added: `https://` to a public address or a host
/// name; with ``WebhookDestinations/allowsLoopback`` (`--webhook-allow-loopback`, development and tests),
/// also `http://` or `https://` to a loopback address or `localhost`. Addresses are read as the system
/// would read them (`127.1`, `0x7f000001` and `017700000001` are 127.0.0.1) and refused when in a range
/// of ``WebhookIPAddress/kind``. A host name is checked again at each delivery, on every address it
/// resolves to then (``WebhookPoster``). No user name or password, no fragment, at most 2048 bytes.
public struct WebhookURL: Sendable, Hashable, CustomStringConvertible {
    public let text: String
    public let host: String

    public init(_ text: String, destinations: WebhookDestinations = .publicOnly) throws(WebhookError) {
        guard (8...2048).contains(text.utf8.count), !text.unicodeScalars.contains(where: Self.refused) else {
            throw WebhookError(.invalidInput, "the URL must be 8 to 2048 printable ASCII characters")
        }
        // The host as the HTTP client reads it (Foundation's URL; URLComponents would turn a punycode name
        // into Unicode), percent-encoding kept: such a host is refused below.
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let host = URL(string: text)?.host(percentEncoded: true), !host.isEmpty
        else {
            throw WebhookError(.invalidInput, "\(text.prefix(100).debugDescription) is not an absolute URL with a host")
        }
        guard components.user == nil, components.password == nil else {
            throw WebhookError(.invalidInput, "the URL must not carry a user name or password")
        }
        guard components.fragment == nil else { throw WebhookError(.invalidInput, "the URL must not have a fragment") }
        guard scheme == "https" || scheme == "http" else {
            throw WebhookError(.invalidInput, "webhook URLs must be https, got scheme \(scheme.prefix(20))")
        }
        let loopback = try Self.checkHost(host, destinations)
        if scheme == "http" && !loopback {
            throw WebhookError(
                .invalidInput,
                "webhook URLs must be https (plain http only to a loopback address, with --webhook-allow-loopback)")
        }
        self.text = text
        self.host = host
    }

    public var description: String { text }

    /// Refuses a host that is no public destination; true when it is loopback (allowed by `destinations`).
    static func checkHost(_ host: String, _ destinations: WebhookDestinations) throws(WebhookError) -> Bool {
        let shown = host.prefix(100)
        if host.contains(":") {
            // An IPv6 literal (with or without its brackets): the standard forms only, no zone id.
            var bare = Substring(host)
            if bare.hasPrefix("[") && bare.hasSuffix("]") { bare = bare.dropFirst().dropLast() }
            guard let address = WebhookIPAddress(String(bare)), case .v6 = address else {
                throw WebhookError(.invalidInput, "\(shown) is not an IPv6 address (zone ids are not accepted)")
            }
            return try check(address, spelled: "[\(address)]", destinations)
        }
        let lower = host.lowercased()
        let name = lower.hasSuffix(".") ? String(lower.dropLast()) : lower
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard !name.isEmpty, name.count <= 253,
            labels.allSatisfy({ label in
                (1...63).contains(label.count) && label.first != "-" && label.last != "-"
                    && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
            })
        else {
            throw WebhookError(
                .invalidInput, "\(shown.debugDescription) is not a host name (letters, digits, hyphens and dots)")
        }
        // As URL parsers do, a name whose last label is a number is an IPv4 address, in inet_aton's
        // forms, which getaddrinfo would connect to.
        if let last = labels.last, last.allSatisfy(\.isNumber) || last.hasPrefix("0x") {
            guard let address = WebhookIPAddress.inetAton(name) else {
                throw WebhookError(.invalidInput, "\(shown) is not an IPv4 address")
            }
            let loopback = try check(address, spelled: String(shown), destinations)
            guard lower == address.description else {
                throw WebhookError(.invalidInput, "write the address \(shown) as \(address)")
            }
            return loopback
        }
        if name == "localhost" || name.hasSuffix(".localhost") {
            guard destinations.allowsLoopback else {
                throw WebhookError(
                    .destinationRefused,
                    "\(shown) is this machine (loopback): webhook destinations must be public; loopback only with "
                        + "--webhook-allow-loopback (development and tests)")
            }
            return true
        }
        return false
    }

    private static func check(
        _ address: WebhookIPAddress, spelled: String, _ destinations: WebhookDestinations
    ) throws(WebhookError) -> Bool {
        let named = spelled == address.description || "[\(address)]" == spelled ? spelled : "\(spelled) (\(address))"
        switch address.kind {
        case .public:
            return false
        case .loopback:
            guard destinations.allowsLoopback else {
                throw WebhookError(
                    .destinationRefused,
                    "\(named) is a loopback address: webhook destinations must be public; loopback only with "
                        + "--webhook-allow-loopback (development and tests)")
            }
            return true
        case .special(let range):
            throw WebhookError(
                .destinationRefused,
                "\(named) is \(range): webhook destinations must be public unicast addresses")
        }
    }

    private static func refused(_ scalar: Unicode.Scalar) -> Bool {
        !scalar.isASCII || scalar.value < 0x21 || scalar.value == 0x7F
    }
}
