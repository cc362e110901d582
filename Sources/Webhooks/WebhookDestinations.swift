import Foundation

/// Where webhook deliveries may go: public unicast addresses, and, when ``allowsLoopback`` is set
/// (`--webhook-allow-loopback`, development and tests), this machine's loopback addresses too.
public struct WebhookDestinations: Sendable, Equatable, CustomStringConvertible {
    /// 127.0.0.0/8, ::1 and `localhost` are allowed too, over http or https.
    public let allowsLoopback: Bool

    public static let publicOnly = WebhookDestinations(allowsLoopback: false)
    public static let publicAndLoopback = WebhookDestinations(allowsLoopback: true)

    public init(allowsLoopback: Bool) {
        self.allowsLoopback = allowsLoopback
    }

    public var description: String { allowsLoopback ? "public and loopback addresses" : "public addresses" }

    /// What kind of address `address` is when it may not be a destination ("private (10.0.0.0/8)"); nil
    /// when it may.
    public func refusal(of address: WebhookIPAddress) -> String? {
        switch address.kind {
        case .public: nil
        case .loopback: allowsLoopback ? nil : "loopback (allowed only with --webhook-allow-loopback)"
        case .special(let range): range
        }
    }
}

/// An IPv4 or IPv6 address, as a delivery connects to it.
public enum WebhookIPAddress: Sendable, Hashable, CustomStringConvertible {
    case v4(UInt32)
    /// The 128 bits, high half first.
    case v6(UInt64, UInt64)

    /// An address in the standard text forms only (`inet_pton`: dotted-quad decimal IPv4, or IPv6 without
    /// brackets or zone id): what the HTTP client connects to without resolving anything.
    public init?(_ text: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self = .v4(UInt32(bigEndian: v4.s_addr))
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            self.init(in6: v6)
        } else {
            return nil
        }
    }

    init(in6 address: in6_addr) {
        var bytes = address
        let (high, low) = withUnsafeBytes(of: &bytes) { raw in
            (
                raw.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) },
                raw.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            )
        }
        self = .v6(high, low)
    }

    /// IPv4 as `inet_aton` (and so `getaddrinfo`) reads it: one to four parts, each decimal, octal
    /// (a leading 0) or hex (`0x`), the last part filling the bytes left: `127.1`, `0x7f000001` and
    /// `017700000001` are all 127.0.0.1. Nil when `text` is not such an address.
    public static func inetAton(_ text: String) -> WebhookIPAddress? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var values: [UInt64] = []
        for part in parts {
            guard let value = number(part) else { return nil }
            values.append(value)
        }
        var address: UInt64 = 0
        for (index, value) in values.dropLast().enumerated() {
            guard value <= 0xFF else { return nil }
            address |= value << UInt64(8 * (3 - index))
        }
        let last = values[values.count - 1]
        let lastBits = UInt64(8 * (5 - values.count))
        guard last < (UInt64(1) << lastBits) else { return nil }
        return .v4(UInt32(address | last))
    }

    private static func number(_ part: Substring) -> UInt64? {
        let lower = part.lowercased()
        let (digits, radix): (Substring, Int)
        if lower.hasPrefix("0x") {
            (digits, radix) = (Substring(lower.dropFirst(2)), 16)
            // "0x" alone is 0 to inet_aton.
            if digits.isEmpty { return 0 }
        } else if lower.hasPrefix("0"), lower.count > 1 {
            (digits, radix) = (Substring(lower.dropFirst()), 8)
        } else {
            (digits, radix) = (Substring(lower), 10)
        }
        guard !digits.isEmpty, digits.count <= 12, digits.allSatisfy(\.isASCII) else { return nil }
        return UInt64(digits, radix: radix)
    }

    public var description: String {
        switch self {
        case .v4(let value):
            return "\(value >> 24).\(value >> 16 & 0xFF).\(value >> 8 & 0xFF).\(value & 0xFF)"
        case .v6(let high, let low):
            var address = in6_addr()
            withUnsafeMutableBytes(of: &address) { raw in
                for index in 0..<8 {
                    raw[index] = UInt8(truncatingIfNeeded: high >> UInt64(56 - 8 * index))
                    raw[8 + index] = UInt8(truncatingIfNeeded: low >> UInt64(56 - 8 * index))
                }
            }
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
}

/// What an address is, as far as webhooks go.
public enum WebhookAddressKind: Sendable, Equatable {
    /// A public unicast address.
    case `public`
    /// 127.0.0.0/8, ::1, or an IPv4-mapped IPv6 form of one.
    case loopback
    /// Anything else that is no public unicast address, named with its range ("private (10.0.0.0/8)").
    case special(String)
}

/// The ranges refused, from IANA's IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890 and its
/// updates), taken whole whether or not the registry marks a block "globally reachable" (no webhook
/// receiver lives in 192.0.0.0/24 or 2001::/23), plus multicast, 240.0.0.0/4 and, for IPv6, anything
/// outside 2000::/3 (IANA's global unicast space). Forms that embed IPv4 (mapped, NAT64, 6to4) are
/// judged by the IPv4 address they embed.
extension WebhookIPAddress {
    public var kind: WebhookAddressKind {
        switch self {
        case .v4(let value):
            return Self.kind(v4: value)
        case .v6(let high, let low):
            return Self.kind(v6: high, low)
        }
    }

    static let v4Ranges: [(prefix: UInt32, length: UInt32, name: String)] = [
        (0x0000_0000, 8, "\"this network\" (0.0.0.0/8)"),
        (0x0A00_0000, 8, "private (10.0.0.0/8)"),
        (0x6440_0000, 10, "shared address space, carrier-grade NAT (100.64.0.0/10)"),
        (0xA9FE_0000, 16, "link-local (169.254.0.0/16)"),
        (0xAC10_0000, 12, "private (172.16.0.0/12)"),
        (0xC000_0000, 24, "IETF protocol assignments (192.0.0.0/24)"),
        (0xC000_0200, 24, "documentation (192.0.2.0/24)"),
        (0xC058_6300, 24, "6to4 relay anycast (192.88.99.0/24)"),
        (0xC0A8_0000, 16, "private (192.168.0.0/16)"),
        (0xC612_0000, 15, "benchmarking (198.18.0.0/15)"),
        (0xC633_6400, 24, "documentation (198.51.100.0/24)"),
        (0xCB00_7100, 24, "documentation (203.0.113.0/24)"),
        (0xE000_0000, 4, "multicast (224.0.0.0/4)"),
        (0xFFFF_FFFF, 32, "limited broadcast (255.255.255.255)"),
        (0xF000_0000, 4, "reserved (240.0.0.0/4)"),
    ]

    static func kind(v4 value: UInt32) -> WebhookAddressKind {
        if value >> 24 == 127 { return .loopback }
        for range in v4Ranges where value >> (32 - range.length) == range.prefix >> (32 - range.length) {
            return .special(range.name)
        }
        return .public
    }

    /// (high 64 bits, low 64 bits, prefix length, name) of the IPv6 ranges refused outright, most
    /// specific first.
    static let v6Ranges: [(high: UInt64, low: UInt64, length: Int, name: String)] = [
        (0x0064_ff9b_0001_0000, 0, 48, "local-use NAT64 (64:ff9b:1::/48)"),
        (0x0100_0000_0000_0000, 0, 64, "discard-only (100::/64)"),
        (0x2001_0db8_0000_0000, 0, 32, "documentation (2001:db8::/32)"),
        (0x2001_0000_0000_0000, 0, 23, "IETF protocol assignments, Teredo among them (2001::/23)"),
        (0x3fff_0000_0000_0000, 0, 20, "documentation (3fff::/20)"),
        (0x5f00_0000_0000_0000, 0, 16, "segment routing (5f00::/16)"),
        (0xfc00_0000_0000_0000, 0, 7, "unique local (fc00::/7)"),
        (0xfe80_0000_0000_0000, 0, 10, "link-local (fe80::/10)"),
        (0xfec0_0000_0000_0000, 0, 10, "site-local, deprecated (fec0::/10)"),
        (0xff00_0000_0000_0000, 0, 8, "multicast (ff00::/8)"),
    ]

    static func kind(v6 high: UInt64, _ low: UInt64) -> WebhookAddressKind {
        if high == 0 {
            if low == 0 { return .special("unspecified (::)") }
            if low == 1 { return .loopback }
            // ::ffff:0:0/96, IPv4-mapped: the IPv4 address itself, loopback included.
            if low >> 32 == 0xFFFF { return kind(v4: UInt32(truncatingIfNeeded: low)) }
            if low >> 32 == 0 { return .special("IPv4-compatible, deprecated (::/96)") }
            return .special("not global unicast (outside 2000::/3)")
        }
        // 64:ff9b::/96, NAT64: reaches the IPv4 address it embeds.
        if high == 0x0064_ff9b_0000_0000, low >> 32 == 0 {
            return embedded(UInt32(truncatingIfNeeded: low), in: "NAT64 (64:ff9b::/96)")
        }
        for range in v6Ranges {
            let shift = UInt64(64 - range.length)
            if high >> shift == range.high >> shift { return .special(range.name) }
        }
        // 2002::/16, 6to4: reaches the IPv4 address in bits 16 to 48.
        if high >> 48 == 0x2002 {
            return embedded(UInt32(truncatingIfNeeded: high >> 16), in: "6to4 (2002::/16)")
        }
        if high >> 61 != 0b001 { return .special("not global unicast (outside 2000::/3)") }
        return .public
    }

    private static func embedded(_ v4: UInt32, in form: String) -> WebhookAddressKind {
        switch kind(v4: v4) {
        case .public: .public
        case .loopback: .special("\(form) of loopback \(WebhookIPAddress.v4(v4))")
        case .special(let name): .special("\(form) of \(WebhookIPAddress.v4(v4)), \(name)")
        }
    }
}
