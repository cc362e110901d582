import Foundation

/// One token bucket for the app's Developer API quota: a request takes a token, tokens come back at
/// ``GooglePlayConfiguration/requestsPerSecond``, the bucket holds a second's worth. As for Apple's
/// (`AppStoreServerAPI.RateLimiter`), a call inside a customer's request leaves the background share to
/// background work and fails at once rather than wait past its deadline; a 429's `Retry-After` holds
/// every caller until then.
actor GooglePlayRateLimiter {
    private let rate: Double
    private let backgroundShare: Double
    private var tokens: Double
    private var refilled: ContinuousClock.Instant
    private var heldUntil: ContinuousClock.Instant?

    init(requestsPerSecond: Double, backgroundShare: Double) {
        rate = max(requestsPerSecond, 0.001)
        self.backgroundShare = backgroundShare
        tokens = max(rate, 1)
        refilled = .now
    }

    func acquire(deadline: ContinuousClock.Instant?) async throws {
        let capacity = max(rate, 1)
        let kept = deadline == nil ? 0 : (capacity * backgroundShare).rounded(.down)
        while true {
            let now = ContinuousClock.now
            tokens = min(capacity, tokens + (now - refilled).seconds * rate)
            refilled = now
            let wait: Duration
            if let held = heldUntil, held > now {
                wait = held - now
            } else if tokens >= 1 + kept {
                tokens -= 1
                heldUntil = nil
                return
            } else {
                wait = .seconds((1 + kept - tokens) / rate)
            }
            if let deadline, now + wait >= deadline {
                throw GooglePlayError(.rateLimited, "no request to Google Play is free before this call's deadline")
            }
            try await Task.sleep(for: wait)
        }
    }

    /// Google answered 429 asking to come back at `until`.
    func hold(until: ContinuousClock.Instant) {
        heldUntil = max(heldUntil ?? until, until)
    }
}
