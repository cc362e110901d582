import Foundation
import Logging
import ServiceLifecycle

/// Runs ``AppStoreSynchronizer`` every `interval` inside `serve` (off unless configured), until
/// graceful shutdown. Each run looks back from the previous run's start with an overlap, so a
/// notification signed just before a run is not missed; the first run looks back `firstLookBack`.
struct AppStoreSyncService: Service {
    let synchronizer: AppStoreSynchronizer
    let interval: Duration
    let firstLookBack: TimeInterval
    let logger: Logger

    /// How far each run looks back before the previous run's start.
    static let overlap: TimeInterval = 15 * 60

    func run() async throws {
        await cancelWhenGracefulShutdown {
            var since = Date().addingTimeInterval(-firstLookBack)
            while !Task.isCancelled {
                let started = Date()
                do {
                    let report = try await synchronizer.sync(since: since, until: started)
                    logger.notice("App Store sync", metadata: ["report": "\(report)"])
                    since = started.addingTimeInterval(-Self.overlap)
                } catch is CancellationError {
                    break
                } catch {
                    // Keep `since`: the next run asks for the same period again.
                    logger.warning("App Store sync failed; will try again", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: interval)
            }
        }
    }
}
