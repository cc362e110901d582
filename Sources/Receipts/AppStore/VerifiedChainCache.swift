import Crypto
import Foundation
import Synchronization

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
        var insertion: UInt64
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var insertions: UInt64 = 0
    }

    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// The leaf key of a remembered chain, if `validationTime` lies in its validity window.
    func leafKey(for key: Key, at validationTime: Date) -> P256.Signing.PublicKey? {
        guard capacity > 0 else { return nil }
        return state.withLock { state in
            guard let entry = state.entries[key],
                entry.validFrom <= validationTime, validationTime <= entry.validUntil
            else { return nil }
            return entry.leafKey
        }
    }

    func remember(_ key: Key, leafKey: P256.Signing.PublicKey, validFrom: Date, validUntil: Date) {
        guard capacity > 0 else { return }
        state.withLock { state in
            if state.entries[key] == nil, state.entries.count >= capacity,
                let oldest = state.entries.min(by: { $0.value.insertion < $1.value.insertion })?.key
            {
                state.entries[oldest] = nil
            }
            state.insertions += 1
            state.entries[key] = Entry(
                leafKey: leafKey, validFrom: validFrom, validUntil: validUntil, insertion: state.insertions)
        }
    }

    var count: Int { state.withLock { $0.entries.count } }
}
