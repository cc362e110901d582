/// When a failed delivery is tried again: exponential backoff from `initial`, doubling up to `maximum`,
/// with "equal jitter" (half the delay fixed, half random) so endpoints that failed together are not
/// retried together; and no more attempts once `giveUpAfter` has passed since the event was queued.
public struct WebhookRetrySchedule: Sendable, Equatable {
    public var initial: Duration
    public var maximum: Duration
    public var giveUpAfter: Duration

    public static let standard = WebhookRetrySchedule(
        initial: .seconds(30), maximum: .seconds(3600), giveUpAfter: .seconds(3 * 24 * 3600))

    public init(initial: Duration, maximum: Duration, giveUpAfter: Duration) {
        self.initial = initial
        self.maximum = max(maximum, initial)
        self.giveUpAfter = giveUpAfter
    }

    /// The wait after failed attempt number `attempt` (1 for the first), `random` in 0...1.
    public func delay(afterAttempt attempt: Int, random: Double) -> Duration {
        let exponent = min(max(attempt - 1, 0), 40)
        let doubled = initial.seconds * Double(UInt64(1) << UInt64(exponent))
        let full = min(doubled, maximum.seconds)
        let jittered = full / 2 + full / 2 * min(max(random, 0), 1)
        return .milliseconds(Int64((jittered * 1000).rounded()))
    }
}

extension Duration {
    /// The duration in seconds, as a Double (for schedules and timeouts, never money).
    var seconds: Double {
        let (s, attoseconds) = components
        return Double(s) + Double(attoseconds) / 1e18
    }
}
