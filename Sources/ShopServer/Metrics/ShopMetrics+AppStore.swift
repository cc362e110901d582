import AppStoreServerAPI
import Foundation
import Prometheus
import Shop

/// The App Store side on `/metrics`: every request to Apple's App Store Server API and every call that
/// failed, by endpoint (a bounded name such as `transaction_history`, never a URL with ids); each run of
/// the App Store sync; each sweep of stored notifications.
///
/// - `shop_appstore_api_requests_total{endpoint,status}`: HTTP exchanges with Apple (each attempt; a
///   retried call counts each), `status` the HTTP status or `none` when no answer came;
/// - `shop_appstore_api_request_duration_seconds{endpoint}`: their latency (histogram);
/// - `shop_appstore_api_errors_total{endpoint,code}`: calls that failed for good, by the client's error
///   code (`api_error`, `timeout`, `transport`, `rate_limited`, `unexpected_response`, `unverified_payload`);
/// - `shop_appstore_sync_runs_total{result}`: sync runs, `ok`, `partial` (some step failed; asked again
///   next run) or `failed`; `shop_appstore_sync_last_success_timestamp_seconds`: when the last `ok` run
///   ended; `shop_appstore_sync_applied_total{kind}`: what runs stored or applied
///   (`notifications_stored`, `notification_events`, `refunds`, `prices`);
///   `shop_appstore_sync_failures_total`: the steps that failed;
/// - `shop_notification_sweeps_total{result}`: sweeps of stored notifications, `ok` or `failed` (the
///   pending ones could not be listed); `shop_notification_sweep_applied_total` and
///   `shop_notification_sweep_failures_total`: notifications a sweep applied, and could not.
extension ShopMetrics: AppStoreAPIObserver {
    static let appleLatencyBuckets: [Duration] = [
        .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10), .seconds(30),
    ]

    public func recordAppStoreRequest(endpoint: String, status: Int?, duration: Duration) {
        registry.makeCounter(
            descriptor: Self.appleRequests,
            labels: [("endpoint", endpoint), ("status", status.map(String.init) ?? "none")]
        ).increment()
        registry.makeDurationHistogram(
            descriptor: Self.appleRequestDuration, labels: [("endpoint", endpoint)], buckets: Self.appleLatencyBuckets
        ).record(duration)
    }

    public func recordAppStoreFailure(endpoint: String, code: String) {
        registry.makeCounter(descriptor: Self.appleErrors, labels: [("endpoint", endpoint), ("code", code)])
            .increment()
    }

    /// A sweep of stored notifications: `listed` false when the pending ones could not be read.
    func recordSweep(listed: Bool, applied: Int, failed: Int) {
        registry.makeCounter(descriptor: Self.sweeps, labels: [("result", listed ? "ok" : "failed")]).increment()
        // Created at every sweep, so both read 0 rather than missing until the first notification.
        registry.makeCounter(descriptor: Self.sweepApplied).increment(by: Int64(applied))
        registry.makeCounter(descriptor: Self.sweepFailures).increment(by: Int64(failed))
    }

    static var appleRequests: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "appstore_api", metricName: "requests", unitName: "total",
            helpText:
                "HTTP requests to the App Store Server API (each attempt), by endpoint and status (none: no answer).")
    }
    static var appleRequestDuration: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "appstore_api", metricName: "request_duration", unitName: "seconds",
            helpText: "Latency of requests to the App Store Server API, by endpoint.")
    }
    static var appleErrors: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "appstore_api", metricName: "errors", unitName: "total",
            helpText: "App Store Server API calls that failed after their retries, by endpoint and error code.")
    }
    static var sweeps: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "notification", metricName: "sweeps", unitName: "total",
            helpText: "Sweeps of stored notifications left unapplied, by result: ok, failed (could not list them).")
    }
    static var sweepApplied: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "notification", metricName: "sweep_applied", unitName: "total",
            helpText: "Stored notifications a sweep applied.")
    }
    static var sweepFailures: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "notification", metricName: "sweep_failures", unitName: "total",
            helpText: "Stored notifications a sweep could not apply (tried again at the next sweep).")
    }
}

extension ShopMetrics: AppStoreSyncCounters {
    package func recordAppStoreSync(_ report: AppStoreSynchronizer.Report?, finishedAt: Date) {
        guard let report else {
            registry.makeCounter(descriptor: Self.syncRuns, labels: [("result", "failed")]).increment()
            return
        }
        let ok = report.failures == 0 && report.notificationHistoryComplete
        registry.makeCounter(descriptor: Self.syncRuns, labels: [("result", ok ? "ok" : "partial")]).increment()
        if ok { registry.makeGauge(descriptor: Self.syncLastSuccess).set(to: finishedAt.timeIntervalSince1970) }
        let applied = [
            ("notifications_stored", report.notificationsStored),
            ("notification_events", report.notificationEventsApplied),
            ("refunds", report.refundsApplied), ("prices", report.pricesLearned),
        ]
        for (kind, count) in applied {
            registry.makeCounter(descriptor: Self.syncApplied, labels: [("kind", kind)]).increment(by: Int64(count))
        }
        registry.makeCounter(descriptor: Self.syncFailures).increment(by: Int64(report.failures))
    }

    static var syncRuns: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "appstore_sync", metricName: "runs", unitName: "total",
            helpText: "App Store sync runs by result: ok, partial (some step failed), failed.")
    }
    static var syncLastSuccess: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "appstore_sync", metricName: "last_success_timestamp", unitName: "seconds",
            helpText: "When the last App Store sync run without a failure ended, in seconds since 1970.")
    }
    static var syncApplied: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "appstore_sync", metricName: "applied", unitName: "total",
            helpText: "What App Store sync runs stored or applied, by kind.")
    }
    static var syncFailures: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "appstore_sync", metricName: "failures", unitName: "total",
            helpText: "Steps of App Store sync runs that failed (asked again at the next run).")
    }
}
