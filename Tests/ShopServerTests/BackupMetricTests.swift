import Foundation
import Ledger
import Logging
import Postgres
import TestSupport
import Testing

@testable import ShopServer

/// `shop_backup_last_success_timestamp_seconds`: 0 ("never") from the start, the newest recorded
/// backup's end once BackupWatcher has read it, and kept (only growing older) when a read fails.
@Suite struct BackupMetricTests {
    static func value(_ metrics: ShopMetrics) -> Double? {
        String(decoding: metrics.registryText(), as: UTF8.self).split(separator: "\n")
            .first { $0.hasPrefix("shop_backup_last_success_timestamp_seconds ") }
            .flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
    }

    static func backup(_ label: String, stoppedAt: TimeInterval) -> BackupRecord {
        BackupRecord(
            stanza: "shopledger", label: label, kind: .diff, startedAt: Date(timeIntervalSince1970: stoppedAt - 60),
            stoppedAt: Date(timeIntervalSince1970: stoppedAt), databaseBytes: 1000, repositoryBytes: 10,
            walStart: "000000010000000000000003", walStop: "000000010000000000000004")
    }

    @Test("exported at 0 by a server that has read nothing yet, and by one whose database records no backup")
    func zeroUntilABackupIsRecorded() async throws {
        #expect(Self.value(ShopMetrics()) == 0)
        try await withTestDatabase { db in
            let metrics = ShopMetrics()
            let watcher = BackupWatcher(
                log: BackupLog(client: db.client), interval: .seconds(60), logger: Logger(label: "test"),
                metrics: metrics)
            await watcher.read()
            #expect(Self.value(metrics) == 0)
        }
    }

    @Test("the newest recorded backup's end, read again after a newer one is recorded; a failed read keeps it")
    func newestBackupsEnd() async throws {
        try await withTestDatabase { db in
            let log = BackupLog(client: db.client)
            let metrics = ShopMetrics()
            let logs = LogRecorder()
            let watcher = BackupWatcher(log: log, interval: .seconds(60), logger: logs.logger, metrics: metrics)
            try await log.record(Self.backup("20261129-033001F", stoppedAt: 1_795_960_854))
            try await log.record(Self.backup("20261129-033001F_20261128-033001D", stoppedAt: 1_795_900_000))
            await watcher.read()
            #expect(Self.value(metrics) == 1_795_960_854, "the newest by its end, not the last recorded")
            try await log.record(Self.backup("20261129-033001F_20261130-033001D", stoppedAt: 1_796_047_254))
            await watcher.read()
            #expect(Self.value(metrics) == 1_796_047_254)

            // The table unreadable (a read-only role without the grant looks the same): the old value stays.
            try await db.client.query("ALTER TABLE backups RENAME TO backups_away")
            await watcher.read()
            #expect(Self.value(metrics) == 1_796_047_254)
            #expect(logs.messages.contains { $0.contains("could not read the last backup's time") }, "\(logs.messages)")
            try await db.client.query("ALTER TABLE backups_away RENAME TO backups")
        }
    }
}
