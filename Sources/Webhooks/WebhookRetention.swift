import Logging
import Postgres
import ServiceLifecycle

/// What the outbox keeps (migration 0018): events are written only while an endpoint is enabled, and
/// deleted once older than the retention window, with their attempts, unless an endpoint still has them
/// queued. A replay reaches back at most this far.
extension WebhookStore {
    /// Events deleted at most per statement: each batch is one short transaction.
    public static let pruneBatch = 10_000

    /// Deletes up to `batch` events (and up to `batch` attempts) older than `keep`; returns how many
    /// events went. Another server pruning at the same moment makes this one return 0 at once.
    /// - Throws: a ``PostgresError`` when `keep` is under a day (the database refuses it).
    public func prune(keep: Duration, batch: Int = WebhookStore.pruneBatch) async throws -> Int {
        let keepSeconds = Int64(keep.components.seconds)
        return try await client.query(
            "SELECT webhook_prune(\(keepSeconds) * interval '1 second', \(Int32(clamping: batch))::integer)"
        ).single().decode(Int.self, at: 0)
    }

    /// Prunes in batches until a batch comes back short; returns the events deleted.
    public func pruneAll(keep: Duration, batch: Int = WebhookStore.pruneBatch) async throws -> Int {
        var total = 0
        while true {
            let pruned = try await prune(keep: keep, batch: batch)
            total += pruned
            if pruned < batch || Task.isCancelled { return total }
        }
    }
}

/// Runs ``WebhookStore/pruneAll(keep:batch:)`` at start and then every `interval` (an hour in `serve`),
/// beside the delivery worker. A failed prune is logged and tried at the next turn.
public struct WebhookRetentionService<C: Clock>: Service where C.Duration == Duration {
    let store: WebhookStore
    let keep: Duration
    let interval: Duration
    let clock: C
    let logger: Logger

    public init(store: WebhookStore, keep: Duration, interval: Duration = .seconds(3600), clock: C, logger: Logger) {
        self.store = store
        self.keep = keep
        self.interval = interval
        self.clock = clock
        self.logger = logger
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let pruned = try await store.pruneAll(keep: keep)
                    if pruned > 0 {
                        logger.info(
                            "pruned webhook events past the retention window", metadata: ["events": "\(pruned)"])
                    }
                } catch {
                    logger.warning("pruning webhook events failed", metadata: ["error": "\(error)"])
                }
                do { try await clock.sleep(for: interval) } catch { return }
            }
        }
    }
}

extension WebhookRetentionService where C == ContinuousClock {
    public init(store: WebhookStore, keep: Duration, interval: Duration = .seconds(3600), logger: Logger) {
        self.init(store: store, keep: keep, interval: interval, clock: ContinuousClock(), logger: logger)
    }
}
