/// Apple's per-endpoint request limits (requests per second, per app), enforced by the client with a
/// token bucket per endpoint so that a sync or a burst of restores slows down instead of earning 429s.
/// The sandbox gets a tenth of each (``sandboxFactor``).
public struct RateLimits: Sendable, Hashable {
    /// The endpoints, as Apple groups their limits.
    public enum Endpoint: String, Sendable, Hashable, CaseIterable {
        case transactionInfo = "transaction_info"
        case transactionHistory = "transaction_history"
        case refundHistory = "refund_history"
        case orderLookup = "order_lookup"
        case notificationHistory = "notification_history"
        case testNotification = "test_notification"
        case testNotificationStatus = "test_notification_status"
    }

    /// Production requests per second per endpoint.
    public var perSecond: [Endpoint: Double]
    /// The share of the production rate allowed in the sandbox.
    public var sandboxFactor: Double
    /// The share of each endpoint's bucket (whole requests, rounded down) that calls made inside a
    /// customer's request leave to background work (sync, pricing): when the quota runs short, the
    /// background goes first, and a customer's call fails fast instead of waiting.
    public var backgroundShare: Double

    public init(perSecond: [Endpoint: Double], sandboxFactor: Double = 0.1, backgroundShare: Double = 0.2) {
        self.perSecond = perSecond
        self.sandboxFactor = sandboxFactor
        self.backgroundShare = backgroundShare
    }

    /// Apple's published limits: 50/s for transaction info, history and notification history, 10/s for
    /// order look-up and refund history, 1/s for test notifications.
    public static let apple = RateLimits(perSecond: [
        .transactionInfo: 50, .transactionHistory: 50, .notificationHistory: 50,
        .refundHistory: 10, .orderLookup: 10,
        .testNotification: 1, .testNotificationStatus: 1,
    ])

    /// The limit for `endpoint` in production (`sandbox` false) or the sandbox.
    public func requestsPerSecond(_ endpoint: Endpoint, sandbox: Bool) -> Double {
        let base = perSecond[endpoint] ?? 1
        return sandbox ? base * sandboxFactor : base
    }
}
