import Synchronization

/// A dictionary of at most `capacity` entries, safe to share between tasks: when it is full, a new key
/// evicts the oldest insertion. The caches of the App Store verifier are built on it; their entries are
/// few (one per certificate chain), so finding the oldest by a scan is cheaper than keeping an order.
final class BoundedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Entry {
        var value: Value
        var insertion: UInt64
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var insertions: UInt64 = 0
    }

    let capacity: Int
    private let state = Mutex(State())

    /// A capacity of 0 remembers nothing.
    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    func value(for key: Key) -> Value? {
        guard capacity > 0 else { return nil }
        return state.withLock { $0.entries[key]?.value }
    }

    func remember(_ value: Value, for key: Key) {
        guard capacity > 0 else { return }
        state.withLock { state in
            if state.entries[key] == nil, state.entries.count >= capacity,
                let oldest = state.entries.min(by: { $0.value.insertion < $1.value.insertion })?.key
            {
                state.entries[oldest] = nil
            }
            state.insertions += 1
            state.entries[key] = Entry(value: value, insertion: state.insertions)
        }
    }

    var count: Int { state.withLock { $0.entries.count } }
}
