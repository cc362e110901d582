import AsyncHTTPClient
import Foundation
import Logging
import ServiceLifecycle

/// What a delivery worker does with its time.
public struct WebhookDeliverySettings: Sendable, Equatable {
    /// The whole exchange with an endpoint: connect, send, the answer's head and its first bytes.
    public var timeout: Duration
    public var schedule: WebhookRetrySchedule
    /// Deliveries in flight at once (per server).
    public var concurrency: Int
    /// How often an idle worker looks for due deliveries.
    public var pollInterval: Duration
    /// How long the outbox keeps an event (``WebhookRetentionService``): how far back a replay reaches.
    public var retention: Duration

    public static let standardRetention = Duration.seconds(30 * 24 * 3600)

    public static let standard = WebhookDeliverySettings(
        timeout: .seconds(10), schedule: .standard, concurrency: 8, pollInterval: .seconds(1))

    public init(
        timeout: Duration, schedule: WebhookRetrySchedule, concurrency: Int, pollInterval: Duration,
        retention: Duration = Self.standardRetention
    ) {
        self.timeout = timeout
        self.schedule = schedule
        self.concurrency = concurrency
        self.pollInterval = pollInterval
        self.retention = retention
    }

    /// How long a claim holds a delivery: twice the timeout and 5 s for recording the outcome. A worker
    /// that dies holding claims delays those deliveries by this much (25 s with the standard timeout).
    public var lease: Duration { timeout * 2 + .seconds(5) }
}

/// Counts what the worker does (`/metrics`).
public protocol WebhookObserver: Sendable {
    func recordWebhookAttempt(type: WebhookEventType, outcome: String, duration: Duration)
}

/// The delivery worker `serve` runs: claims due deliveries (several servers share the queue through
/// `SKIP LOCKED`), posts them concurrently, records each attempt, and schedules retries. Delivery is
/// at least once: a worker that dies after an endpoint answered but before the outcome was recorded
/// sends that event again (same id) once the claim's lease runs out. Each attempt goes only to an
/// address `destinations` allows, checked when it is made (``WebhookPoster``); a refused one is a failed
/// attempt (`destination_refused`), retried on the same schedule as any other.
public struct WebhookDeliveryService: Service {
    let store: WebhookStore
    let settings: WebhookDeliverySettings
    let logger: Logger
    let observer: (any WebhookObserver)?
    let userAgent: String
    let destinations: WebhookDestinations
    let resolver: any WebhookResolver

    public init(
        store: WebhookStore, settings: WebhookDeliverySettings, userAgent: String, logger: Logger,
        observer: (any WebhookObserver)? = nil, destinations: WebhookDestinations = .publicOnly,
        resolver: any WebhookResolver
    ) {
        self.destinations = destinations
        self.resolver = resolver
        self.store = store
        self.settings = settings
        self.userAgent = userAgent
        self.logger = logger
        self.observer = observer
    }

    public func run() async throws {
        let clients = WebhookClients()
        let poster = WebhookPoster(
            clients: clients, destinations: destinations, resolver: resolver, timeout: settings.timeout,
            userAgent: userAgent)
        await cancelWhenGracefulShutdown { await deliverUntilCancelled(poster) }
        await clients.shutdown()
    }

    /// Keeps up to `concurrency` deliveries in flight: claims what is due whenever a slot is free, and
    /// looks again when a delivery ends or every `pollInterval`. A slow endpoint holds only its own slots.
    func deliverUntilCancelled(_ poster: WebhookPoster) async {
        await withTaskGroup(of: Bool.self) { group in
            var inFlight = 0
            var ticking = false
            var lastCheck: ContinuousClock.Instant?
            while !Task.isCancelled {
                if lastCheck.map({ ContinuousClock.now - $0 >= Self.headCheckInterval }) ?? true {
                    lastCheck = .now
                    await promoteWaitingHeads()
                }
                if inFlight < settings.concurrency {
                    for delivery in await claim(settings.concurrency - inFlight) {
                        inFlight += 1
                        group.addTask {
                            await deliver(delivery, poster)
                            return true
                        }
                    }
                }
                if !ticking {
                    ticking = true
                    group.addTask {
                        try? await Task.sleep(for: settings.pollInterval)
                        return false
                    }
                }
                // A delivery ended (a slot is free), or the poll interval passed.
                guard let delivered = await group.next() else { break }
                if delivered { inFlight -= 1 } else { ticking = false }
            }
            group.cancelAll()
        }
    }

    /// How often a worker checks that no queue's first event waits for ever (``WebhookStore/promoteWaitingHeads()``).
    static let headCheckInterval = Duration.seconds(300)

    private func promoteWaitingHeads() async {
        do {
            let promoted = try await store.promoteWaitingHeads()
            if promoted > 0 {
                logger.warning("webhook queue heads were left waiting; made due", metadata: ["count": "\(promoted)"])
            }
        } catch {
            if !Task.isCancelled {
                logger.warning("could not check the webhook queues' heads", metadata: ["error": "\(error)"])
            }
        }
    }

    private func claim(_ limit: Int) async -> [WebhookDelivery] {
        do {
            return try await store.claim(limit: limit, lease: settings.lease)
        } catch {
            if !Task.isCancelled {
                logger.warning("could not claim webhook deliveries; will try again", metadata: ["error": "\(error)"])
            }
            return []
        }
    }

    private func deliver(_ delivery: WebhookDelivery, _ poster: WebhookPoster) async {
        let result = await poster.post(delivery)
        let delay = settings.schedule.delay(afterAttempt: delivery.attempt, random: Double.random(in: 0...1))
        var metadata: Logger.Metadata = [
            "event": "\(WebhookEvent.publicId(delivery.event.eventId))", "type": "\(delivery.event.type.rawValue)",
            "endpoint": "\(delivery.endpointId)", "attempt": "\(delivery.attempt)",
        ]
        if let status = result.statusCode { metadata["status"] = "\(status)" }
        // Recording is retried briefly: the endpoint has the event; losing the outcome only means sending
        // it again after the lease.
        var recorded: WebhookStore.Recorded?
        for pause in [Duration.zero, .milliseconds(200), .seconds(1)] {
            if pause > .zero { try? await Task.sleep(for: pause) }
            do {
                recorded = try await store.record(
                    result, of: delivery, retryAfter: delay, giveUpAfter: settings.schedule.giveUpAfter)
                break
            } catch {
                metadata["error"] = "\(error)"
            }
        }
        let outcome: String
        switch recorded {
        case .delivered:
            outcome = "delivered"
            logger.debug("webhook delivered", metadata: metadata)
        case .retrying(let at):
            outcome = "failed"
            metadata["error"] = "\(result.error ?? "")"
            if let detail = result.detail { metadata["detail"] = "\(detail)" }
            metadata["retry_at"] = "\(at)"
            logger.info("webhook delivery failed; will retry", metadata: metadata)
        case .gaveUp:
            outcome = "gave_up"
            metadata["error"] = "\(result.error ?? "")"
            if let detail = result.detail { metadata["detail"] = "\(detail)" }
            logger.warning("webhook delivery given up after the retry window", metadata: metadata)
        case .superseded:
            outcome = result.outcome.rawValue
        case nil:
            outcome = "unrecorded"
            logger.warning(
                "could not record a webhook attempt; it is sent again after the claim's lease", metadata: metadata)
        }
        observer?.recordWebhookAttempt(type: delivery.event.type, outcome: outcome, duration: result.duration)
    }
}
