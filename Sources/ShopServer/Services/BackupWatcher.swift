import Ledger
import Logging
import ServiceLifecycle

/// Reads when the newest recorded backup ended (`backups`, written by the backup job's
/// `shopledger backups record`) into `shop_backup_last_success_timestamp_seconds`: at start, then every
/// `interval`, until graceful shutdown. One indexed `max()` a minute per server; `/metrics` itself
/// never waits for the database.
struct BackupWatcher: Service {
    let log: BackupLog
    let interval: Duration
    let logger: Logger
    let metrics: ShopMetrics

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await read()
                try? await Task.sleep(for: interval)
            }
        }
    }

    /// One read; on failure the gauge keeps its value (an old time, which the alert sees growing older).
    func read() async {
        do {
            metrics.recordLastBackup(stoppedAt: try await log.lastBackupStop())
        } catch {
            logger.warning(
                "could not read the last backup's time; will try again", metadata: ["error": "\(error)"])
        }
    }
}
