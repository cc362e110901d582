import Ledger
import Logging
import ServiceLifecycle

/// Applies stored notifications whose ledger step did not happen (the process died, or the database
/// failed, between storing and applying): at start, then every `interval`, until graceful shutdown.
struct NotificationSweeper: Service {
    let ledger: LedgerStore
    let interval: Duration
    let logger: Logger
    /// Counts sweeps, and the notifications applied and not (`/metrics`).
    var metrics: ShopMetrics?

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await sweep()
                try? await Task.sleep(for: interval)
            }
        }
    }

    /// Applies what is pending now; returns how many notifications it applied.
    @discardableResult
    func sweep() async -> Int {
        let pending: [String]
        do {
            pending = try await ledger.unappliedNotifications(limit: 500)
        } catch {
            logger.warning("could not list stored notifications; will try again", metadata: ["error": "\(error)"])
            metrics?.recordSweep(listed: false, applied: 0, failed: 0)
            return 0
        }
        var applied = 0
        var failed = 0
        // Each on its own: one that keeps failing must not hold back the ones after it.
        for uuid in pending {
            guard !Task.isCancelled else { break }
            do {
                _ = try await ledger.applyNotification(uuid)
                applied += 1
            } catch {
                failed += 1
                logger.warning(
                    "could not apply a stored notification; will try again",
                    metadata: ["notification": "\(uuid)", "error": "\(error)"])
            }
        }
        metrics?.recordSweep(listed: true, applied: applied, failed: failed)
        if applied > 0 { logger.notice("applied stored notifications", metadata: ["count": "\(applied)"]) }
        return applied
    }
}
