import Foundation

/// One token bucket per (endpoint, environment): a request takes a token, tokens come back at the
/// endpoint's rate, and the bucket holds at most one second's worth, so a burst is never more than
/// Apple allows in a second.
actor RateLimiter {
    private struct Bucket {
        var tokens: Double
        var refilled: ContinuousClock.Instant
    }

    private let limits: RateLimits
    private let clock = ContinuousClock()
    private var buckets: [String: Bucket] = [:]

    init(limits: RateLimits) { self.limits = limits }

    /// Waits until a request to `endpoint` is within the limit, then counts it.
    func acquire(_ endpoint: RateLimits.Endpoint, sandbox: Bool) async throws {
        let rate = max(limits.requestsPerSecond(endpoint, sandbox: sandbox), 0.001)
        let capacity = max(rate, 1)
        let key = "\(endpoint.rawValue)/\(sandbox)"
        while true {
            let now = clock.now
            var bucket = buckets[key] ?? Bucket(tokens: capacity, refilled: now)
            bucket.tokens = min(capacity, bucket.tokens + (now - bucket.refilled).seconds * rate)
            bucket.refilled = now
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                buckets[key] = bucket
                return
            }
            buckets[key] = bucket
            // Actor reentrancy: another waiter may take the token first; then this one waits again.
            try await Task.sleep(for: .seconds((1 - bucket.tokens) / rate))
        }
    }
}
