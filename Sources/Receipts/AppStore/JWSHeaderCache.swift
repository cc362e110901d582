import Foundation

/// Remembers parsed JWS headers by the exact bytes of their base64url segment.
///
/// Every transaction signed with one certificate chain carries the same header (`alg` and the `x5c`
/// chain, about 5 KiB of base64url), and decoding it with `JSONDecoder` was about 5% of the server's
/// CPU per purchase. Parsing is a function of those bytes alone, so a hit returns exactly what parsing
/// them again would; only headers that parsed are remembered (a refused one is parsed, and refused,
/// again). Bounded like ``VerifiedChainCache``: a stream of distinct headers only evicts, it never grows.
final class JWSHeaderCache: Sendable {
    /// The header's decoded JSON and what was read from it.
    struct Parsed: Sendable {
        let header: CompactJWS.Header
        let json: [UInt8]
    }

    /// The segment's bytes, hashed and compared in bulk (`[UInt8]`'s own hashing goes byte by byte).
    struct Segment: Hashable, Sendable {
        let bytes: [UInt8]

        static func == (lhs: Segment, rhs: Segment) -> Bool {
            lhs.bytes.count == rhs.bytes.count
                && lhs.bytes.withUnsafeBytes { left in
                    rhs.bytes.withUnsafeBytes { right in
                        left.isEmpty || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0
                    }
                }
        }

        func hash(into hasher: inout Hasher) {
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    private let entries: BoundedCache<Segment, Parsed>

    init(capacity: Int) {
        self.entries = BoundedCache(capacity: capacity)
    }

    func parsed(_ segment: ArraySlice<UInt8>) -> Parsed? {
        entries.value(for: Segment(bytes: Array(segment)))
    }

    func remember(_ parsed: Parsed, for segment: ArraySlice<UInt8>) {
        entries.remember(parsed, for: Segment(bytes: Array(segment)))
    }

    var count: Int { entries.count }
}
