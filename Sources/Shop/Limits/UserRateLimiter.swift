import Synchronization

/// Token buckets per user for one ``RateLimit``: what one account may spend of what every user shares
/// (Apple's API quota for restores, the CPU a refused proof costs).
///
/// Buckets live in memory, per server process. A bucket that has refilled is the same as none, so
/// when the table grows past its bound the full ones are dropped first; it can never grow without
/// bound (at worst, past `maximumUsers` users with partly spent buckets, all are forgotten).
package final class UserRateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private struct State {
        var buckets: [String: Bucket] = [:]
        var pruneAt = 1024
    }

    package let limit: RateLimit
    private let maximumUsers: Int
    private let now: @Sendable () -> ContinuousClock.Instant
    private let state = Mutex(State())

    package init(
        _ limit: RateLimit, maximumUsers: Int = 100_000,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
    ) {
        self.limit = limit
        self.maximumUsers = maximumUsers
        self.now = now
    }

    /// Spends one of `uid`'s tokens; nil when it had one, else how long until it will.
    @discardableResult
    package func take(_ uid: String) -> Duration? {
        guard !limit.isOff else { return nil }
        let now = now()
        return state.withLock { state in
            var bucket = refilled(state.buckets[uid], at: now)
            guard bucket.tokens >= 1 else { return wait(for: bucket) }
            bucket.tokens -= 1
            state.buckets[uid] = bucket
            prune(&state, at: now)
            return nil
        }
    }

    /// Whether `uid` has a token now, without spending it; nil when it has, else how long until it will.
    package func check(_ uid: String) -> Duration? {
        guard !limit.isOff else { return nil }
        let now = now()
        return state.withLock { state in
            let bucket = refilled(state.buckets[uid], at: now)
            return bucket.tokens >= 1 ? nil : wait(for: bucket)
        }
    }

    /// How many users have a bucket now (for tests).
    package var trackedUsers: Int { state.withLock { $0.buckets.count } }

    private var secondsPerToken: Double { limit.seconds / Double(limit.count) }

    private func refilled(_ bucket: Bucket?, at now: ContinuousClock.Instant) -> Bucket {
        guard let bucket else { return Bucket(tokens: Double(limit.count), updated: now) }
        let elapsed = Self.seconds(now - bucket.updated)
        return Bucket(tokens: min(Double(limit.count), bucket.tokens + elapsed / secondsPerToken), updated: now)
    }

    private func wait(for bucket: Bucket) -> Duration {
        .milliseconds(Int64(((1 - bucket.tokens) * secondsPerToken * 1000).rounded(.up)))
    }

    private func prune(_ state: inout State, at now: ContinuousClock.Instant) {
        guard state.buckets.count > state.pruneAt else { return }
        state.buckets = state.buckets.filter { refilled($0.value, at: now).tokens < Double(limit.count) }
        if state.buckets.count > maximumUsers { state.buckets = [:] }
        state.pruneAt = max(1024, 2 * state.buckets.count)
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
