import Foundation
import Prometheus

/// Google's certificates fetched from their URL (`--google-certs-url`) on `/metrics`:
/// - `shop_google_certificates_fetches_total{result}`: fetches, `ok` or `failed` (the keys in use kept);
/// - `shop_google_certificates_last_success_timestamp_seconds`: when the last fetch that brought a usable
///   key set ended (UNIX time; Google's answers are fresh for hours, so a value far behind `time()`
///   means the keys are no longer being refreshed).
extension ShopMetrics {
    func recordGoogleCertificateFetch(ok: Bool, at time: Date = Date()) {
        registry.makeCounter(descriptor: Self.googleFetches, labels: [("result", ok ? "ok" : "failed")]).increment()
        if ok { registry.makeGauge(descriptor: Self.googleLastSuccess).set(to: time.timeIntervalSince1970) }
    }

    static var googleFetches: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "google_certificates", metricName: "fetches", unitName: "total",
            helpText: "Fetches of Google's securetoken certificates from their URL, ok or failed (keys kept).")
    }
    static var googleLastSuccess: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "google_certificates", metricName: "last_success_timestamp",
            unitName: "seconds",
            helpText: "When the last fetch of Google's certificates that brought usable keys ended.")
    }
}
