import Crypto
import Foundation

/// Remembers (leaf, intermediate) pairs that validated to a configured root, with the leaf's key and the
/// window in which every certificate of the chain is valid, so that the next transaction signed by the
/// same certificates costs one signature check.
///
/// Chain validation depends on the validation time only through certificate validity, so a hit whose
/// `signedDate` lies inside the remembered window is exactly as good as validating again; outside it the
/// caller validates afresh (and is refused). Bounded: the oldest entry goes when it is full.
final class VerifiedChainCache: Sendable {
    struct Key: Hashable, Sendable {
        var leafDER: [UInt8]
        var intermediateDER: [UInt8]
    }

    struct Entry: Sendable {
        var leafKey: P256.Signing.PublicKey
        var validFrom: Date
        var validUntil: Date
    }

    private let entries: BoundedCache<Key, Entry>

    init(capacity: Int) {
        self.entries = BoundedCache(capacity: capacity)
    }

    /// The leaf key of a remembered chain, if `validationTime` lies in its validity window.
    func leafKey(for key: Key, at validationTime: Date) -> P256.Signing.PublicKey? {
        guard let entry = entries.value(for: key), entry.validFrom <= validationTime, validationTime <= entry.validUntil
        else { return nil }
        return entry.leafKey
    }

    func remember(_ key: Key, leafKey: P256.Signing.PublicKey, validFrom: Date, validUntil: Date) {
        entries.remember(Entry(leafKey: leafKey, validFrom: validFrom, validUntil: validUntil), for: key)
    }

    var count: Int { entries.count }
}
