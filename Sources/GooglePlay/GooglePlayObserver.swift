/// Told of every request the client sends to Google and of every call that fails, so that a server can
/// count them (ShopServer's metrics conform) without this module depending on it. Endpoints are a bounded
/// set (`token`, `products_get`, `products_acknowledge`, `products_consume`, `voided_purchases`), never a
/// URL with ids in it.
public protocol GooglePlayObserver: Sendable {
    /// One HTTP exchange with Google (each attempt), `status` its HTTP status, nil when no answer came.
    func recordGooglePlayRequest(endpoint: String, status: Int?, duration: Duration)

    /// A call that failed for good (after its retries), by the ``GooglePlayError/Code`` raw value.
    func recordGooglePlayFailure(endpoint: String, code: String)
}
