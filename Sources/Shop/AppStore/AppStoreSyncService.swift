import Foundation
import Logging
import Receipts
import ServiceLifecycle

/// Runs ``AppStoreSynchronizer`` every `interval` inside `serve` (off unless configured), until
/// graceful shutdown. Each run looks back from the previous run's start with an overlap, so a
/// notification signed just before a run is not missed; the first run looks back `firstLookBack`.
/// When the notification history of an environment was not all fetched and stored, the next run asks
/// for the same period again (Apple's window still bounds it: the synchronizer clamps).
package struct AppStoreSyncService: Service {
    let synchronizer: AppStoreSynchronizer
    let interval: Duration
    let firstLookBack: TimeInterval
    let logger: Logger
    let counters: (any AppStoreSyncCounters)?
    /// What `interval` is measured on (tests move a clock of their own).
    let clock: any Clock<Duration>

    package init(
        synchronizer: AppStoreSynchronizer, interval: Duration, firstLookBack: TimeInterval, logger: Logger,
        counters: (any AppStoreSyncCounters)? = nil, clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.synchronizer = synchronizer
        self.interval = interval
        self.firstLookBack = firstLookBack
        self.logger = logger
        self.counters = counters
        self.clock = clock
    }

    /// How far each run looks back before the previous run's start.
    static let overlap: TimeInterval = 15 * 60

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            var since = Date().addingTimeInterval(-firstLookBack)
            while !Task.isCancelled {
                let started = Date()
                do {
                    let report = try await synchronizer.sync(since: since, until: started)
                    counters?.recordAppStoreSync(report, finishedAt: Date())
                    log(report)
                    since = Self.nextSince(after: report, since: since, started: started)
                } catch is CancellationError {
                    break
                } catch {
                    // The synchronizer throws only on cancellation; anything else keeps `since`, asked again.
                    counters?.recordAppStoreSync(nil, finishedAt: Date())
                    logger.warning("App Store sync failed; will try again", metadata: ["error": "\(error)"])
                }
                try? await clock.sleep(for: interval)
            }
        }
    }

    /// Where the next run starts: the same `since` when the notification history of an environment
    /// was not all fetched and stored (so that period is asked again), otherwise shortly before this
    /// run's start.
    static func nextSince(after report: AppStoreSynchronizer.Report, since: Date, started: Date) -> Date {
        report.notificationHistoryComplete ? started.addingTimeInterval(-overlap) : since
    }

    /// What the run amounted to (the synchronizer logged each failure and warning as it happened).
    private func log(_ report: AppStoreSynchronizer.Report) {
        var metadata: Logger.Metadata = ["report": "\(report)"]
        if !report.warnings.isEmpty { metadata["warnings"] = "\(report.warnings)" }
        guard report.failures > 0 else {
            logger.notice("App Store sync", metadata: metadata)
            return
        }
        metadata["failed"] = "\(report.failed.map(\.description))"
        metadata["asked_again"] = "\(report.notificationHistoryIncomplete.map(\.rawValue).sorted())"
        logger.warning("App Store sync: some of it failed; the next run tries again", metadata: metadata)
    }
}

/// Counts the App Store sync's runs (ShopServer's metrics conform), as ``PurchaseCounters`` counts
/// purchases: Shop does not depend on the metrics.
package protocol AppStoreSyncCounters: Sendable {
    /// A run that ended: `report` says what it applied and what failed; nil when it threw.
    func recordAppStoreSync(_ report: AppStoreSynchronizer.Report?, finishedAt: Date)
}
