#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IP address, IPv4 or IPv6, as its bytes (4 or 16). An IPv4-mapped IPv6 address
/// (`::ffff:192.0.2.1`) is read as the IPv4 address it maps, so one rule covers both spellings.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 (IPv6), network order.
    public let bytes: [UInt8]

    /// Parses the textual form (`192.0.2.1`, `2001:db8::1`); nil for anything else (ports, brackets,
    /// zone ids, host names, surrounding spaces).
    public init?(_ text: some StringProtocol) {
        let text = String(text)
        guard !text.isEmpty, text.utf8.count <= 45 else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let all = withUnsafeBytes(of: &v6) { Array($0) }
        let mapped = all[0..<10].allSatisfy { $0 == 0 } && all[10] == 0xFF && all[11] == 0xFF
        bytes = mapped ? Array(all[12...]) : all
    }

    /// The canonical textual form (`inet_ntop`), so one client is written one way in the logs.
    public var description: String {
        var buffer = [CChar](repeating: 0, count: 64)
        let written = bytes.withUnsafeBytes { raw in
            buffer.withUnsafeMutableBufferPointer {
                inet_ntop(bytes.count == 4 ? AF_INET : AF_INET6, raw.baseAddress, $0.baseAddress, 64)
            }
        }
        guard written != nil else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// An address or a CIDR block (`10.0.0.0/8`, `fd00::/8`, `127.0.0.1`: a single address).
public struct AddressRange: Sendable, Hashable, CustomStringConvertible {
    public let network: IPAddress
    public let prefixLength: Int

    /// Parses `ADDRESS` or `ADDRESS/PREFIX`; nil when either part is not one, or the prefix is longer
    /// than the address. Host bits set under the prefix are ignored (`10.1.2.3/8` is `10.0.0.0/8`).
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(parts[0]) else { return nil }
        let bits = address.bytes.count * 8
        if parts.count == 2 {
            guard parts[1].count <= 3, parts[1].allSatisfy(\.isASCII), let length = Int(parts[1]),
                (0...bits).contains(length)
            else { return nil }
            prefixLength = length
        } else {
            prefixLength = bits
        }
        network = address
    }

    public func contains(_ address: IPAddress) -> Bool {
        guard address.bytes.count == network.bytes.count else { return false }
        var remaining = prefixLength
        for (a, b) in zip(address.bytes, network.bytes) where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            if a & mask != b & mask { return false }
            remaining -= 8
        }
        return true
    }

    public var description: String {
        prefixLength == network.bytes.count * 8 ? "\(network)" : "\(network)/\(prefixLength)"
    }
}

/// The proxies (`--trusted-proxy`) whose `X-Forwarded-For` names the client. A request whose TCP peer
/// is not one of them is from the client itself: its `X-Forwarded-For` is ignored, whatever it says.
public struct TrustedProxies: Sendable, Hashable, CustomStringConvertible {
    public let ranges: [AddressRange]

    /// No proxy is trusted: the client is always the TCP peer.
    public static let none = TrustedProxies(ranges: [])

    public init(ranges: [AddressRange]) {
        self.ranges = ranges
    }

    /// Parses addresses or CIDR blocks, each item of `items` itself a comma-separated list (spaces
    /// around items allowed). Throws naming the first item that is neither.
    public init(parsing items: [String]) throws(TrustedProxyError) {
        var ranges: [AddressRange] = []
        for item in items {
            for piece in item.split(separator: ",", omittingEmptySubsequences: false) {
                let trimmed = piece.trimmingSpaces
                guard let range = AddressRange(trimmed) else { throw TrustedProxyError(value: String(trimmed)) }
                ranges.append(range)
            }
        }
        self.ranges = ranges
    }

    public var isEmpty: Bool { ranges.isEmpty }

    public func trusts(_ address: IPAddress) -> Bool {
        ranges.contains { $0.contains(address) }
    }

    public var description: String { ranges.map(\.description).joined(separator: ",") }

    /// The client of a request whose TCP peer is `peer` and whose `X-Forwarded-For` fields are
    /// `forwardedFor` (in the order received; several fields are one list, as RFC 9110 reads them).
    ///
    /// - A peer that is not a trusted proxy is the client: the header is ignored (a client cannot
    ///   choose its own address).
    /// - From a trusted proxy, the list is read from the right (the end the proxy appended to): the
    ///   first address that is not itself a trusted proxy is the client. Addresses to its left were
    ///   written by whoever sent the request to it, and may be made up. When every address is a
    ///   trusted proxy, the left-most is the client.
    /// - No header, an empty one, or any item that is not a bare IP address (a port, a name,
    ///   `unknown`, garbage): the peer is the client.
    public func client(peer: IPAddress?, forwardedFor: [String]) -> IPAddress? {
        guard let peer, trusts(peer), !forwardedFor.isEmpty else { return peer }
        var addresses: [IPAddress] = []
        for field in forwardedFor {
            for item in field.split(separator: ",", omittingEmptySubsequences: false) {
                guard let address = IPAddress(item.trimmingSpaces) else { return peer }
                addresses.append(address)
            }
        }
        return addresses.last { !trusts($0) } ?? addresses.first ?? peer
    }
}

/// A `--trusted-proxy` item that is neither an IP address nor a CIDR block.
public struct TrustedProxyError: Error, Sendable, Equatable, CustomStringConvertible {
    public let value: String

    public var description: String {
        "\(value.prefix(60).debugDescription) is not an IP address or CIDR block (like 10.0.0.5, 10.0.0.0/8 or fd00::/8)"
    }
}

extension Substring {
    /// Without the spaces and tabs around it (the optional whitespace of a header list).
    fileprivate var trimmingSpaces: Substring {
        var slice = self
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return slice
    }
}
