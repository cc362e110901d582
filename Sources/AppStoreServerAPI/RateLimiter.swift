import Foundation

/// One token bucket per (endpoint, environment): a request takes a token, tokens come back at the
/// endpoint's rate, and the bucket holds at most one second's worth, so a burst is never more than
/// Apple allows in a second.
///
/// Apple's quota is the app's, shared by background work (sync, pricing) and calls made inside a
/// customer's request. Background work may take any token and waits for one; a call inside a request
/// (one with a deadline) leaves ``RateLimits/backgroundShare`` of the bucket to background work and,
/// rather than wait past its deadline, fails at once. When Apple answers 429 with a `Retry-After`, the
/// endpoint is held until then for every caller (``hold(_:sandbox:until:)``).
actor RateLimiter {
    private struct Bucket {
        var tokens: Double
        var refilled: ContinuousClock.Instant
        /// Apple asked us to wait until then.
        var heldUntil: ContinuousClock.Instant?
    }

    private let limits: RateLimits
    /// The monotonic clock (tests pass one they move: deadlines are its instants).
    private let clock: any Clock<Duration>
    private let now: @Sendable () -> ContinuousClock.Instant
    private var buckets: [String: Bucket] = [:]

    init(limits: RateLimits) { self.init(limits: limits, clock: ContinuousClock()) }

    init<C: Clock<Duration>>(limits: RateLimits, clock: C) where C.Instant == ContinuousClock.Instant {
        self.limits = limits
        self.clock = clock
        self.now = { clock.now }
    }

    /// Waits until a request to `endpoint` is within the limit, then counts it.
    ///
    /// - Parameter deadline: a call inside a request: it may not take the background share, and throws
    ///   ``AppStoreServerAPIError/Code/rateLimited`` at once when no token would come before `deadline`.
    func acquire(_ endpoint: RateLimits.Endpoint, sandbox: Bool, deadline: ContinuousClock.Instant? = nil) async throws
    {
        let rate = max(limits.requestsPerSecond(endpoint, sandbox: sandbox), 0.001)
        let capacity = max(rate, 1)
        // Whole tokens kept back from calls inside requests (none when the bucket holds one token).
        let kept = deadline == nil ? 0 : (capacity * limits.backgroundShare).rounded(.down)
        let key = "\(endpoint.rawValue)/\(sandbox)"
        while true {
            let now = self.now()
            var bucket = buckets[key] ?? Bucket(tokens: capacity, refilled: now)
            bucket.tokens = min(capacity, bucket.tokens + (now - bucket.refilled).seconds * rate)
            bucket.refilled = now
            var wait: Duration = .zero
            if let held = bucket.heldUntil, held > now {
                wait = held - now
            } else if bucket.tokens >= 1 + kept {
                bucket.tokens -= 1
                bucket.heldUntil = nil
                buckets[key] = bucket
                return
            } else {
                wait = .seconds((1 + kept - bucket.tokens) / rate)
            }
            buckets[key] = bucket
            if let deadline, now + wait >= deadline {
                throw AppStoreServerAPIError(
                    .rateLimited, "\(endpoint.rawValue): no request to Apple is free before this call's deadline")
            }
            // Actor reentrancy: another waiter may take the token first; then this one waits again.
            try await clock.sleep(for: wait)
        }
    }

    /// Apple answered 429 asking to come back at `until`: no call to `endpoint` goes out before then.
    func hold(_ endpoint: RateLimits.Endpoint, sandbox: Bool, until: ContinuousClock.Instant) {
        let key = "\(endpoint.rawValue)/\(sandbox)"
        let now = self.now()
        let capacity = max(limits.requestsPerSecond(endpoint, sandbox: sandbox), 1)
        var bucket = buckets[key] ?? Bucket(tokens: capacity, refilled: now)
        bucket.heldUntil = max(bucket.heldUntil ?? until, until)
        buckets[key] = bucket
    }
}
