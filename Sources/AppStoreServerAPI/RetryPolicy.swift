import Foundation

/// What the client does after an attempt that did not succeed: sign a new token and send again, wait
/// and retry, or give up with which error. A value type with no clock and no I/O (the pool's
/// `PoolState` is the model): `send` does what it says, and the table of cases is tested without a server.
struct RetryPolicy: Sendable, Equatable {
    /// Attempts per call, the first included (a token renewal after a 401 is not counted).
    var maxAttempts: Int
    /// The first backoff, doubled per attempt, when Apple gives no `Retry-After`.
    var initialBackoff: Duration
    /// The longest single wait; a 429's `Retry-After` further away than this is not waited for.
    var maxRetryWait: Duration
    /// Less time than this left before the deadline after a wait, and the retry is not started.
    var shortestAttempt: Duration

    init(maxAttempts: Int, initialBackoff: Duration, maxRetryWait: Duration, shortestAttempt: Duration) {
        self.maxAttempts = maxAttempts
        self.initialBackoff = initialBackoff
        self.maxRetryWait = maxRetryWait
        self.shortestAttempt = shortestAttempt
    }

    init(_ configuration: AppStoreServerAPIConfiguration, shortestAttempt: Duration) {
        self.init(
            maxAttempts: configuration.maxAttempts, initialBackoff: configuration.initialBackoff,
            maxRetryWait: configuration.maxRetryWait, shortestAttempt: shortestAttempt)
    }

    /// What one attempt got, short of a 2xx answer.
    enum Outcome: Sendable, Equatable {
        /// Apple answered `status` (not 2xx); `error` is its error body as the client's error, `retryAt`
        /// its `Retry-After` when it sent one.
        case answered(status: Int, error: AppStoreServerAPIError, retryAt: Date?)
        /// No answer: a timeout or a failed connection, as the client's error.
        case noAnswer(AppStoreServerAPIError)
    }

    /// The decision, and whether the endpoint is held (nobody asks it before then) whatever is decided.
    struct Decision: Sendable, Equatable {
        enum Action: Sendable, Equatable {
            /// A 401, the first of the call: sign a new token and send again at once (Apple no longer takes
            /// the old one: clock skew, a rotated key).
            case renewToken
            /// Wait, then attempt again; `failure` is what this attempt got (for the log).
            case retry(after: Duration, failure: AppStoreServerAPIError)
            /// Throw `failure`.
            case giveUp(AppStoreServerAPIError)
        }

        var action: Action
        /// A 429 with `Retry-After`: the endpoint is held until then, at most ``RetryPolicy/maxRetryWait`` on.
        var holdEndpointUntil: ContinuousClock.Instant?

        init(_ action: Action, holdEndpointUntil: ContinuousClock.Instant? = nil) {
            self.action = action
            self.holdEndpointUntil = holdEndpointUntil
        }
    }

    /// The decision after attempt number `attempt` (from 1) ended with `outcome`.
    ///
    /// Retried: 429, 5xx and no answer, with backoff doubling from ``initialBackoff`` or the wait Apple's
    /// `Retry-After` asks for, each cut to ``maxRetryWait``. A 429 asking for longer than that, or for a time
    /// past `deadline`, gives up at once as ``AppStoreServerAPIError/Code/rateLimited``; so does any retry
    /// that could not start ``shortestAttempt`` before `deadline`. Other statuses are not retried.
    /// - Parameters:
    ///   - renewedToken: whether this call already signed a new token after a 401.
    ///   - now: the monotonic clock's now, against `deadline`.
    ///   - date: the wall clock's now, against `Retry-After`.
    func decide(
        after outcome: Outcome, attempt: Int, renewedToken: Bool, deadline: ContinuousClock.Instant?,
        now: ContinuousClock.Instant, date: Date
    ) -> Decision {
        let failure: AppStoreServerAPIError
        var waitHint: Duration?
        var hold: ContinuousClock.Instant?
        switch outcome {
        case .noAnswer(let error):
            failure = error
        case .answered(let status, let apiError, let retryAt):
            switch status {
            case 401 where !renewedToken:
                return Decision(.renewToken)
            case 429:
                var limited = apiError
                limited.code = .rateLimited
                if let retryAt {
                    limited.retryAt = retryAt
                    let wait = Self.wait(until: retryAt, from: date)
                    // Nobody asks this endpoint before then (at most the longest wait we make).
                    hold = now + min(wait, maxRetryWait)
                    guard wait <= maxRetryWait else {
                        limited.message = "Apple asks to wait until \(retryAt), longer than the configured wait"
                        return Decision(.giveUp(limited), holdEndpointUntil: hold)
                    }
                    if let deadline, now + wait >= deadline {
                        limited.message = "Apple asks to wait until \(retryAt), past this call's deadline"
                        return Decision(.giveUp(limited), holdEndpointUntil: hold)
                    }
                    waitHint = wait
                }
                failure = limited
            case 500...599:
                failure = apiError
                waitHint = retryAt.map { Self.wait(until: $0, from: date) }
            default:
                return Decision(.giveUp(apiError))
            }
        }

        guard attempt < maxAttempts else { return Decision(.giveUp(failure), holdEndpointUntil: hold) }
        let backoff = initialBackoff * (1 << min(attempt - 1, 10))
        let wait = min(waitHint ?? backoff, maxRetryWait)
        // Inside a request, a retry that could not start before its deadline is not waited for.
        if let deadline, now + wait + shortestAttempt >= deadline {
            return Decision(.giveUp(failure), holdEndpointUntil: hold)
        }
        return Decision(.retry(after: wait, failure: failure), holdEndpointUntil: hold)
    }

    /// From `date` to `retryAt`; zero for a time already past.
    private static func wait(until retryAt: Date, from date: Date) -> Duration {
        .seconds(max(0, retryAt.timeIntervalSince(date)))
    }
}
