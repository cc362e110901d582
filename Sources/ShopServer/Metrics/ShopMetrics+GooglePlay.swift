import GooglePlay
import Prometheus

/// The Google Play side on `/metrics`, as the App Store's (`ShopMetrics+AppStore`):
///
/// - `shop_googleplay_api_requests_total{endpoint,status}`: HTTP exchanges with the Google Play Developer
///   API (each attempt), `status` the HTTP status or `none` when no answer came;
/// - `shop_googleplay_api_request_duration_seconds{endpoint}`: their latency (histogram);
/// - `shop_googleplay_api_errors_total{endpoint,code}`: calls that failed for good, by the client's error
///   code (`api_error`, `timeout`, `transport`, `rate_limited`, `authentication`, `unexpected_response`).
///
/// Endpoints: `products_get`, `products_acknowledge`, `products_consume`, `voided_purchases`.
extension ShopMetrics: GooglePlayObserver {
    public func recordGooglePlayRequest(endpoint: String, status: Int?, duration: Duration) {
        registry.makeCounter(
            descriptor: Self.googleRequests,
            labels: [("endpoint", endpoint), ("status", status.map(String.init) ?? "none")]
        ).increment()
        registry.makeDurationHistogram(
            descriptor: Self.googleRequestDuration, labels: [("endpoint", endpoint)],
            buckets: Self.appleLatencyBuckets
        ).record(duration)
    }

    public func recordGooglePlayFailure(endpoint: String, code: String) {
        registry.makeCounter(descriptor: Self.googleErrors, labels: [("endpoint", endpoint), ("code", code)])
            .increment()
    }

    static var googleRequests: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "googleplay_api", metricName: "requests", unitName: "total",
            helpText:
                "HTTP requests to the Google Play Developer API (each attempt), by endpoint and status (none: no answer)."
        )
    }
    static var googleRequestDuration: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "googleplay_api", metricName: "request_duration", unitName: "seconds",
            helpText: "Latency of HTTP requests to the Google Play Developer API, by endpoint.")
    }
    static var googleErrors: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "googleplay_api", metricName: "errors", unitName: "total",
            helpText: "Google Play Developer API calls that failed after their retries, by endpoint and error code.")
    }
}
