import Synchronization

/// Token buckets per key (a user, a client address) for one ``RateLimit``: what one sender may spend of
/// what every sender shares (Apple's API quota, the CPU a refused proof costs).
///
/// A limit is a reservation: ``admit(_:)`` takes the token when the work is admitted, before it runs, and
/// ``release(_:refund:)`` gives it back when the outcome says the limited thing did not happen (a proof
/// that was accepted, a verification cut short). Checking on arrival and spending on return let 1,500
/// parallel proofs from one account through a limit of 30. Uses in flight per key can be capped too
/// (`maximumInFlight`), whatever tokens are left.
///
/// Buckets live in memory, per server process. A refilled bucket with nothing in flight is the same as
/// none: when the table outgrows its bound those are dropped first; if it is still over (more than
/// `maximumUsers` keys with partly spent buckets at once), the fullest buckets are dropped until a
/// quarter of the bound is free, so a key that is dropped loses at most what it had left to refill, and
/// nobody's empty bucket is ever reset. Keys with work in flight are never dropped.
package final class UserRateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
        var inFlight = 0
    }

    private struct State {
        var buckets: [String: Bucket] = [:]
        var pruneAt: Int
    }

    /// One admitted use, to hand back with ``release(_:refund:)`` once it is over.
    package struct Ticket: Sendable {
        fileprivate let key: String
        /// False when the limit is off: nothing was taken.
        fileprivate let counted: Bool
    }

    /// Why a use was not admitted, and when to try again.
    package struct Refusal: Error, Sendable, Equatable {
        package enum Reason: Sendable, Equatable {
            /// The key's bucket is empty.
            case noTokens
            /// The key has `maximumInFlight` uses running.
            case tooManyInFlight
        }

        package let reason: Reason
        package let retryAfter: Duration
    }

    package let limit: RateLimit
    /// At most this many uses of one key admitted and not yet released; nil for no cap.
    package let maximumInFlight: Int?
    private let maximumUsers: Int
    private let now: @Sendable () -> ContinuousClock.Instant
    private let state: Mutex<State>

    package init(
        _ limit: RateLimit, maximumInFlight: Int? = nil, maximumUsers: Int = 100_000,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
    ) {
        self.limit = limit
        self.maximumInFlight = maximumInFlight
        self.maximumUsers = max(1, maximumUsers)
        self.now = now
        self.state = Mutex(State(pruneAt: min(1024, max(1, maximumUsers))))
    }

    /// Admits one use by `key`: takes a token from its bucket and a place among its uses in flight.
    package func admit(_ key: String) -> Result<Ticket, Refusal> {
        guard !limit.isOff else { return .success(Ticket(key: key, counted: false)) }
        let now = now()
        return state.withLock { state in
            var bucket = refilled(state.buckets[key], at: now)
            if let maximumInFlight, bucket.inFlight >= maximumInFlight {
                return .failure(Refusal(reason: .tooManyInFlight, retryAfter: .seconds(1)))
            }
            guard bucket.tokens >= 1 else { return .failure(Refusal(reason: .noTokens, retryAfter: wait(for: bucket))) }
            bucket.tokens -= 1
            bucket.inFlight += 1
            state.buckets[key] = bucket
            prune(&state, at: now)
            return .success(Ticket(key: key, counted: true))
        }
    }

    /// Ends an admitted use; with `refund`, its token goes back to the bucket (never above the limit).
    package func release(_ ticket: Ticket, refund: Bool) {
        guard ticket.counted else { return }
        let now = now()
        state.withLock { state in
            guard var bucket = state.buckets[ticket.key] else { return }
            bucket = refilled(bucket, at: now)
            bucket.inFlight = max(0, bucket.inFlight - 1)
            if refund { bucket.tokens = min(Double(limit.count), bucket.tokens + 1) }
            state.buckets[ticket.key] = bucket
        }
    }

    /// Spends one of `key`'s tokens at once (a use that is over as soon as it is admitted); nil when it
    /// had one, else how long until it will.
    @discardableResult
    package func take(_ key: String) -> Duration? {
        switch admit(key) {
        case .success(let ticket):
            release(ticket, refund: false)
            return nil
        case .failure(let refusal):
            return refusal.retryAfter
        }
    }

    /// How many keys have a bucket now (for tests).
    package var trackedUsers: Int { state.withLock { $0.buckets.count } }

    private var secondsPerToken: Double { limit.seconds / Double(limit.count) }

    private func refilled(_ bucket: Bucket?, at now: ContinuousClock.Instant) -> Bucket {
        guard var bucket else { return Bucket(tokens: Double(limit.count), updated: now) }
        let elapsed = Self.seconds(now - bucket.updated)
        bucket.tokens = min(Double(limit.count), bucket.tokens + max(0, elapsed) / secondsPerToken)
        bucket.updated = now
        return bucket
    }

    private func wait(for bucket: Bucket) -> Duration {
        .milliseconds(Int64(((1 - bucket.tokens) * secondsPerToken * 1000).rounded(.up)))
    }

    /// Drops refilled, idle buckets once the table has doubled since the last time; past
    /// `maximumUsers`, the fullest idle ones too, down to three quarters of it.
    private func prune(_ state: inout State, at now: ContinuousClock.Instant) {
        guard state.buckets.count > state.pruneAt else { return }
        let full = Double(limit.count)
        var kept: [String: Bucket] = [:]
        var partial: [(key: String, tokens: Double)] = []
        for (key, bucket) in state.buckets {
            let current = refilled(bucket, at: now)
            guard current.inFlight > 0 || current.tokens < full else { continue }
            kept[key] = current
            if current.inFlight == 0 { partial.append((key, current.tokens)) }
        }
        if kept.count > maximumUsers {
            let target = maximumUsers - maximumUsers / 4
            partial.sort { $0.tokens > $1.tokens }
            for (key, _) in partial.prefix(kept.count - target) { kept[key] = nil }
        }
        state.buckets = kept
        state.pruneAt = min(max(1024, 2 * kept.count), maximumUsers)
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
