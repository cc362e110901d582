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
        nil
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
