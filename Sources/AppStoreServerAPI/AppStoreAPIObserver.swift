/// Told of every request the client sends to Apple and of every call that fails, so that a server can
/// count them (ShopServer's metrics conform) without this module depending on it. Endpoints are
/// ``RateLimits/Endpoint`` raw values (`transaction_history`, `notification_history`, ...): a bounded
/// set, never a URL with ids in it.
public protocol AppStoreAPIObserver: Sendable {
    /// One HTTP exchange with Apple (each attempt of a call: retries count again), `status` its HTTP
    /// status, nil when no answer came (timed out, connection failed); `duration` from sending to the
    /// answer's end.
    func recordAppStoreRequest(endpoint: String, status: Int?, duration: Duration)

    /// A call that failed for good (after its retries), by the ``AppStoreServerAPIError/Code`` raw value
    /// (`api_error`, `timeout`, `rate_limited`, ...).
    func recordAppStoreFailure(endpoint: String, code: String)
}
