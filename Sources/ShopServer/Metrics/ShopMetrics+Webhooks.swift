import Prometheus
import Webhooks

extension ShopMetrics: WebhookObserver {
    /// One delivery attempt: `delivered`, `failed` (retried), `gave_up`, or `unrecorded` (the outcome
    /// could not be written; the event goes out again after the claim's lease).
    public func recordWebhookAttempt(type: WebhookEventType, outcome: String, duration: Duration) {
        registry.makeCounter(descriptor: Self.webhookAttempts, labels: [("type", type.rawValue), ("outcome", outcome)])
            .increment()
        registry.makeDurationHistogram(descriptor: Self.webhookAttemptDuration, buckets: Self.webhookBuckets)
            .record(duration)
    }

    static var webhookAttempts: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "webhooks", metricName: "attempts", unitName: "total",
            helpText: "Webhook delivery attempts, by event type and outcome (delivered, failed, gave_up, unrecorded).")
    }
    static var webhookAttemptDuration: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "webhooks", metricName: "attempt_duration", unitName: "seconds",
            helpText: "Time from sending a webhook to its endpoint's answer (or the timeout).")
    }
    static let webhookBuckets: [Duration] = [
        .milliseconds(10), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
        .seconds(2), .seconds(5), .seconds(10), .seconds(30),
    ]
}
