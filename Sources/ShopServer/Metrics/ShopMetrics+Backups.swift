import Foundation
import Prometheus

/// The last good backup on `/metrics` (BackupWatcher reads it from the `backups` table):
/// - `shop_backup_last_success_timestamp_seconds`: when the newest recorded backup ended (UNIX time).
///   0 from the start and while no backup is recorded: "never", so `time() - …` is as old as it gets
///   and the alert on it fires; a failed read keeps the value read before, which only grows older.
extension ShopMetrics {
    /// Sets the gauge: `stop`, or 0 (never) when no backup is recorded.
    func recordLastBackup(stoppedAt stop: Date?) {
        registry.makeGauge(descriptor: Self.lastBackup).set(to: stop?.timeIntervalSince1970 ?? 0)
    }

    static var lastBackup: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "backup", metricName: "last_success_timestamp", unitName: "seconds",
            helpText:
                "When the newest backup recorded by `shopledger backups record` ended (UNIX time); 0 when none is.")
    }
}
