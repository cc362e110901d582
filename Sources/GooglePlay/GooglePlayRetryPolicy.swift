import Foundation

/// What the client does after an attempt that did not succeed: get a new access token and send again,
/// wait and retry, or give up. A value type with no clock and no I/O, as `AppStoreServerAPI.RetryPolicy`:
/// retried are 429 (at Google's `Retry-After` when it sends one), 5xx and no answer, with backoff
/// doubling from ``initialBackoff``, each wait cut to ``maxRetryWait``; nothing is waited for past a
/// call's deadline.
struct GooglePlayRetryPolicy: Sendable, Equatable {
    var maxAttempts: Int
    var initialBackoff: Duration
    var maxRetryWait: Duration
    /// Less time than this left before the deadline after a wait, and the retry is not started.
    var shortestAttempt: Duration

    enum Outcome: Sendable, Equatable {
        case answered(status: Int, error: GooglePlayError, retryAfter: Duration?)
        case noAnswer(GooglePlayError)
    }

    enum Action: Sendable, Equatable {
        case renewToken
        case retry(after: Duration, failure: GooglePlayError)
        case giveUp(GooglePlayError)
    }

    /// The decision after attempt `attempt` (from 1), and how long the endpoint is held (a 429's wait).
    func decide(
        after outcome: Outcome, attempt: Int, renewedToken: Bool, timeLeft: Duration?
    ) -> (action: Action, hold: Duration?) {
        let failure: GooglePlayError
        var waitHint: Duration?
        var hold: Duration?
        switch outcome {
        case .noAnswer(let error):
            failure = error
        case .answered(let status, let error, let retryAfter):
            switch status {
            case 401 where !renewedToken:
                return (.renewToken, nil)
            case 429:
                var limited = error
                limited.code = .rateLimited
                if let retryAfter {
                    hold = min(retryAfter, maxRetryWait)
                    guard retryAfter <= maxRetryWait else {
                        limited.message = "Google asks to wait \(retryAfter), longer than the configured wait"
                        return (.giveUp(limited), hold)
                    }
                    if let timeLeft, retryAfter >= timeLeft {
                        limited.message = "Google asks to wait \(retryAfter), past this call's deadline"
                        return (.giveUp(limited), hold)
                    }
                    waitHint = retryAfter
                }
                failure = limited
            case 500...599:
                failure = error
                waitHint = retryAfter
            default:
                return (.giveUp(error), nil)
            }
        }
        guard attempt < maxAttempts else { return (.giveUp(failure), hold) }
        let wait = min(waitHint ?? initialBackoff * (1 << min(attempt - 1, 10)), maxRetryWait)
        if let timeLeft, wait + shortestAttempt >= timeLeft { return (.giveUp(failure), hold) }
        return (.retry(after: wait, failure: failure), hold)
    }
}
