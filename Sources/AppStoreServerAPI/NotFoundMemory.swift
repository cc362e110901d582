import Foundation
import Receipts
import Synchronization

/// Transaction ids Apple said it does not know, per environment, remembered for a while: asking again
/// within that time answers "not found" without spending Apple's quota (a restore naming an unknown
/// id, repeated; a price lookup of a purchase Apple does not list). Bounded: past ``capacity`` the
/// expired entries go, then the oldest.
final class NotFoundMemory: Sendable {
    private struct State {
        var until: [String: ContinuousClock.Instant] = [:]
    }

    let lifetime: Duration
    let capacity: Int
    private let state = Mutex(State())

    init(lifetime: Duration, capacity: Int = 10_000) {
        self.lifetime = lifetime
        self.capacity = capacity
    }

    /// Whether Apple said `id` is not found in `environment` less than ``lifetime`` ago.
    func remembers(_ id: String, in environment: StoreEnvironment) -> Bool {
        guard lifetime > .zero else { return false }
        let key = Self.key(id, environment)
        let now = ContinuousClock.now
        return state.withLock { state in
            guard let until = state.until[key] else { return false }
            if until > now { return true }
            state.until[key] = nil
            return false
        }
    }

    func remember(_ id: String, in environment: StoreEnvironment) {
        guard lifetime > .zero else { return }
        let now = ContinuousClock.now
        state.withLock { state in
            if state.until.count >= capacity {
                state.until = state.until.filter { $0.value > now }
                if state.until.count >= capacity, let oldest = state.until.min(by: { $0.value < $1.value }) {
                    state.until[oldest.key] = nil
                }
            }
            state.until[Self.key(id, environment)] = now + lifetime
        }
    }

    private static func key(_ id: String, _ environment: StoreEnvironment) -> String {
        "\(environment.rawValue)/\(id)"
    }
}
