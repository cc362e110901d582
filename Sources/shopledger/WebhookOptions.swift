import ArgumentParser
import Webhooks

/// Whether webhook endpoints may be on this machine's loopback addresses: `serve` (the admin API and
/// the deliveries) and `webhooks add`.
struct WebhookDestinationOptions: ParsableArguments {
    @Flag(
        name: .customLong("webhook-allow-loopback"),
        help:
            "Allow webhook endpoints on this machine's loopback addresses (127.0.0.0/8, ::1, localhost), over http or https (development and tests only; every other non-public address stays refused). Default: $SHOPLEDGER_WEBHOOK_ALLOW_LOOPBACK=1"
    )
    var allowLoopback = false

    func destinations() throws -> WebhookDestinations {
        try Setting.toggle(allowLoopback, "SHOPLEDGER_WEBHOOK_ALLOW_LOOPBACK") ? .publicAndLoopback : .publicOnly
    }
}

/// `serve`'s webhook delivery worker: its timeout, retry schedule and concurrency; where webhooks may go.
struct WebhookOptions: ParsableArguments {
    @OptionGroup var destinations: WebhookDestinationOptions

    @Flag(
        name: .customLong("no-webhook-delivery"),
        help:
            "Do not run the webhook delivery worker in this server (events are still written to the outbox; other servers deliver them). Default: $SHOPLEDGER_NO_WEBHOOK_DELIVERY, else off"
    )
    var noDelivery = false

    @Option(
        name: .customLong("webhook-timeout"),
        help:
            "Seconds an endpoint has to answer a webhook (connect, send, answer) before the attempt counts as failed (0.1 to 60). Default: $SHOPLEDGER_WEBHOOK_TIMEOUT or 10"
    )
    var timeout: Double?

    @Option(
        name: .customLong("webhook-retry-initial"),
        help:
            "Seconds before the first retry of a failed webhook; each later wait doubles, with jitter (0.01 to 3600). Default: $SHOPLEDGER_WEBHOOK_RETRY_INITIAL or 30"
    )
    var retryInitial: Double?

    @Option(
        name: .customLong("webhook-retry-max"),
        help:
            "Longest wait between webhook retries, in seconds (0.01 to 86400). Default: $SHOPLEDGER_WEBHOOK_RETRY_MAX or 3600"
    )
    var retryMax: Double?

    @Option(
        name: .customLong("webhook-give-up-after"),
        help:
            "Seconds after an event was queued past which a failing delivery is given up (1 to 2592000). Default: $SHOPLEDGER_WEBHOOK_GIVE_UP_AFTER or 259200 (3 days)"
    )
    var giveUpAfter: Double?

    @Option(
        name: .customLong("webhook-concurrency"),
        help:
            "Webhook deliveries in flight at once in this server (1 to 256). Default: $SHOPLEDGER_WEBHOOK_CONCURRENCY or 8"
    )
    var concurrency: Int?

    @Option(
        name: .customLong("webhook-poll-interval"),
        help:
            "Seconds between looks for due webhook deliveries while idle (0.01 to 60). Default: $SHOPLEDGER_WEBHOOK_POLL_INTERVAL or 1"
    )
    var pollInterval: Double?

    @Option(
        name: .customLong("webhook-retention"),
        help:
            "Days the outbox keeps a webhook event (how far back a replay reaches); older events are deleted unless still queued (1 to 3650, at least the give-up window). Default: $SHOPLEDGER_WEBHOOK_RETENTION or 30"
    )
    var retentionDays: Int?

    /// The worker's settings; nil when this server delivers none.
    func settings() throws -> WebhookDeliverySettings? {
        guard !(try Setting.toggle(noDelivery, "SHOPLEDGER_NO_WEBHOOK_DELIVERY")) else { return nil }
        let standard = WebhookDeliverySettings.standard
        var settings = WebhookDeliverySettings(
            timeout: try Setting.duration(
                timeout, "--webhook-timeout", "SHOPLEDGER_WEBHOOK_TIMEOUT", in: 0.1...60, default: 10),
            schedule: WebhookRetrySchedule(
                initial: try Setting.duration(
                    retryInitial, "--webhook-retry-initial", "SHOPLEDGER_WEBHOOK_RETRY_INITIAL", in: 0.01...3600,
                    default: 30),
                maximum: try Setting.duration(
                    retryMax, "--webhook-retry-max", "SHOPLEDGER_WEBHOOK_RETRY_MAX", in: 0.01...86_400, default: 3600),
                giveUpAfter: try Setting.duration(
                    giveUpAfter, "--webhook-give-up-after", "SHOPLEDGER_WEBHOOK_GIVE_UP_AFTER", in: 1...2_592_000,
                    default: 259_200)),
            concurrency: try Setting.integer(
                concurrency, "--webhook-concurrency", "SHOPLEDGER_WEBHOOK_CONCURRENCY", in: 1...256)
                ?? standard.concurrency,
            pollInterval: try Setting.duration(
                pollInterval, "--webhook-poll-interval", "SHOPLEDGER_WEBHOOK_POLL_INTERVAL", in: 0.01...60, default: 1))
        let days =
            try Setting.integer(retentionDays, "--webhook-retention", "SHOPLEDGER_WEBHOOK_RETENTION", in: 1...3650)
            ?? 30
        settings.retention = .seconds(days * 24 * 3600)
        guard settings.retention >= settings.schedule.giveUpAfter else {
            throw ValidationError(
                "--webhook-retention (\(days) days) must be at least the give-up window (--webhook-give-up-after, "
                    + "\(Int(settings.schedule.giveUpAfter.components.seconds)) s): an event still being retried is kept"
            )
        }
        return settings
    }
}
