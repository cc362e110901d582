import Foundation
import Logging
import NIOCore
import Postgres
import TestSupport
import Testing

/// The restore drill of docs/operations.md ("Backups and the restore drill"), with pgBackRest, the shipped
/// deploy/pgbackrest/pgbackrest.conf and the real binary: WAL archived from the start, a full backup
/// recorded by `shopledger backups record`, a purchase load, a time T read from the database's clock in
/// the middle of it, then a restore to T into a new data folder, and the copy promoted
/// (BackupRestoreTests+Promote.swift).
@Suite("Faults: a full backup and a point-in-time restore with pgBackRest")
struct BackupRestoreTests {
    /// The time to restore to, and the instants (on the test's clock) around the query that read it.
    struct Target: Sendable {
        /// `clock_timestamp()` as PostgreSQL prints it, with its offset: what `--target` gets.
        let text: String
        /// Just before the query was sent: a purchase acknowledged before this committed before T.
        let before: ContinuousClock.Instant
        /// Just after its answer came: a purchase sent after this committed after T.
        let after: ContinuousClock.Instant
    }

    @Test(
        "restored to a time T taken under a purchase load, into a new data folder: every purchase acknowledged before T is there exactly once, none sent after T is, and shopledger reconcile passes; promoted, it is backed up, recorded and served",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(5)))
    func restoreToATimeUnderLoad() async throws {
        try await FaultScenario.run("backup") { scenario in
            var logger = Logger(label: "shopledger.fault-backup")
            logger.logLevel = .warning
            // Durable, WAL archived. archive_mode takes a restart to change: a start setting here, as it
            // is a line of postgresql.conf on a real host; archive_command is set below like an operator
            // would, once the repository exists, and reloaded.
            let primary = try LocalPostgres(
                options: .init(
                    dataDirectory: scenario.folder + "/archived/postgres", port: try TestCluster.freePort(),
                    durable: true, settings: ["archive_mode": "on", "wal_level": "replica"]),
                logger: logger)
            let primaryRunning = try await primary.start()
            var sockets = [primaryRunning.socketDirectory]
            defer {
                for socket in sockets where socket.hasPrefix("/tmp/.shopledger-") {
                    try? FileManager.default.removeItem(atPath: socket)
                }
            }
            let primaryURL = primaryRunning.url(database: "postgres")
            let repository = try BackupRepository.create(
                in: scenario.folder + "/backup", dataDirectory: primary.options.dataDirectory,
                port: primaryRunning.port, socketDirectory: primaryRunning.socketDirectory)
            try await FaultCluster.withClient(url: primaryURL) { client in
                try await client.query(
                    PostgresQuery(unsafeSQL: "ALTER SYSTEM SET archive_command = '\(repository.archiveCommand)'"))
                try await client.query("SELECT pg_reload_conf()")
            }
            let migrated = try await Spawned.run([try ServerProcess.binary(), "migrate", "--database-url", primaryURL])
            try #require(migrated.status == .exited(0), "migrate: \(migrated.output)")

            // The stanza, a check that archive_command delivers (it switches WAL and waits for the
            // segment), and the full backup every restore starts from.
            try await repository.run(["stanza-create"])
            try await repository.run(["check"])
            let backupStarted = ContinuousClock.now
            try await repository.run(["backup", "--type=full"])
            let backupEnded = ContinuousClock.now
            let backupTook = backupEnded - backupStarted
            // Recorded, as the backup job does after each backup: the servers export when it ended.
            let recorded = try await repository.record(databaseURL: primaryURL)
            let firstBackup = try await Self.single(primaryURL, "SELECT label FROM backups")
            let firstBackupStop = try await Self.single(
                primaryURL, "SELECT extract(epoch FROM stopped_at)::bigint::text FROM backups")
            #expect(recorded.contains("recorded \(firstBackup) (full"), "\(recorded)")
            #expect(
                try await repository.run(["info", "--output=json"]).contains(#""label":"\#(firstBackup)""#),
                "the label recorded is pgBackRest's")

            let server = try await scenario.startServer(databaseURL: primaryURL)
            let firstStop = try #require(Double(firstBackupStop))
            #expect(
                try await Self.lastBackupMetric(scenario.http, server, expected: firstStop) == firstStop,
                "the server exports the recorded backup's end")
            let load = PurchaseLoad(
                scenario: "backup", workers: FaultSettings.clients(8), baseURL: server.baseURL,
                requestTimeout: .seconds(10))
            try await load.registerUsers(scenario.http)
            let record = LoadRecord()
            let stop = StopSignal()
            let loadStarted = ContinuousClock.now
            let wanted = FaultSettings.acknowledgedBeforeFault
            let target = try await withThrowingTaskGroup(of: Target?.self) { group in
                group.addTask {
                    await load.run(scenario.http, until: stop, record: record)
                    return nil
                }
                try await record.waitUntilAcknowledged(wanted, since: loadStarted)
                // pgBackRest picks the backup whose stop time, in whole seconds, is before T's whole second
                // (else: "unable to find backup set with stop time less than"): T comes two seconds after
                // the backup ended at the earliest, the load going on meanwhile.
                let sinceBackup = ContinuousClock.now - backupEnded
                if sinceBackup < .seconds(2) { try await Task.sleep(for: .seconds(2) - sinceBackup) }
                let target = try await FaultCluster.withClient(url: primaryURL) { client in
                    // Connected first, so that the window around the clock's reading is one round trip.
                    try await client.query("SELECT 1")
                    let before = ContinuousClock.now
                    let text = try await client.query("SELECT clock_timestamp()::text").single().decode(
                        String.self, at: 0)
                    return Target(text: text, before: before, after: .now)
                }
                // As many again, half of that, sent after T: the restore must leave every one out.
                let afterStarted = ContinuousClock.now
                while record.all.count(where: { $0.acknowledged && $0.started > target.after }) < wanted / 2,
                    ContinuousClock.now - afterStarted < .seconds(60)
                {
                    try await Task.sleep(for: .milliseconds(10))
                }
                stop.set()
                for try await _ in group {}
                return target
            }
            let loadTook = ContinuousClock.now - loadStarted
            server.kill()

            // The last segment, with the purchases after T, is archived before the primary goes: a
            // restore to T needs a commit after T in the archive to know where to stop.
            let archiveStarted = ContinuousClock.now
            let switched = try await Self.single(primaryURL, "SELECT pg_walfile_name(pg_switch_wal())")
            var archived = ""
            while archived < switched, ContinuousClock.now - archiveStarted < .seconds(60) {
                archived = try await Self.single(
                    primaryURL, "SELECT coalesce(last_archived_wal, '') FROM pg_stat_archiver")
                if archived < switched { try await Task.sleep(for: .milliseconds(20)) }
            }
            let archiveTook = ContinuousClock.now - archiveStarted
            try #require(archived >= switched, "segment \(switched) not archived within 60 s (last: \(archived))")
            let primaryPurchases = try await Self.single(primaryURL, "SELECT count(*)::text FROM purchases")
            try await primary.stop()

            // The restore, into a new data folder; the backed-up one is left as it was.
            let restoredDirectory = scenario.folder + "/restored/postgres"
            try BackupRepository.emptyDataFolder(restoredDirectory)
            let restoreStarted = ContinuousClock.now
            try await repository.run([
                "restore", "--type=time", "--target=\(target.text)", "--target-action=promote",
                "--pg1-path=\(restoredDirectory)",
            ])
            let restoreTook = ContinuousClock.now - restoreStarted
            // Started without archiving: a copy must never push its own timeline into the repository.
            let restored = try LocalPostgres(
                options: .init(
                    dataDirectory: restoredDirectory, port: try TestCluster.freePort(), durable: true,
                    settings: ["archive_mode": "off"]),
                logger: logger)
            let recoveryStarted = ContinuousClock.now
            let restoredRunning = try await restored.start()
            sockets.append(restoredRunning.socketDirectory)
            let restoredURL = restoredRunning.url(database: "postgres")
            var inRecovery = "true"
            while inRecovery == "true", ContinuousClock.now - recoveryStarted < .seconds(60) {
                inRecovery = try await Self.single(restoredURL, "SELECT pg_is_in_recovery()::text")
                if inRecovery == "true" { try await Task.sleep(for: .milliseconds(20)) }
            }
            let recoveryTook = ContinuousClock.now - recoveryStarted
            try #require(inRecovery == "false", "the restored cluster was not promoted within 60 s")

            // What the clients saw, against what the restored cluster holds.
            var counts: [String: Int] = [:]
            try await FaultCluster.withClient(url: restoredURL) { client in
                for row in try await client.query(
                    "SELECT transaction_id, count(*) FROM purchases GROUP BY transaction_id")
                {
                    let (transaction, count) = try row.decode((String, Int).self)
                    counts[transaction] = count
                }
            }
            let attempts = record.all
            let beforeT = attempts.filter { $0.acknowledged && $0.finished < target.before }
            let afterT = attempts.filter { $0.started > target.after }
            let failedBeforeT = attempts.filter { !$0.acknowledged && $0.finished < target.before }
            // Sent before T was read, answered after: committed before or after it, either is right.
            let inFlight = attempts.filter { $0.started <= target.after && $0.finished >= target.before }
            let inFlightRestored = inFlight.count(where: { counts[$0.request.transactionId] != nil })
            let sent = Set(attempts.map(\.request.transactionId))

            #expect(beforeT.count >= wanted, "the load ran before T: \(beforeT.count) acknowledged")
            #expect(
                afterT.count(where: \.acknowledged) >= wanted / 2,
                "the load ran after T: \(afterT.count(where: \.acknowledged)) acknowledged")
            #expect(failedBeforeT.isEmpty, "failed before T: \(failedBeforeT.prefix(3).map(\.outcome))")
            let missing = beforeT.filter { counts[$0.request.transactionId] != 1 }.map(\.request.transactionId)
            #expect(missing.isEmpty, "acknowledged before T, not in the restore once: \(missing.prefix(10))")
            let leaked = afterT.filter { counts[$0.request.transactionId] != nil }.map(\.request.transactionId)
            #expect(leaked.isEmpty, "sent after T, yet restored: \(leaked.prefix(10))")
            #expect(counts.values.allSatisfy { $0 == 1 }, "a purchase restored twice")
            let unknown = counts.keys.filter { !sent.contains($0) }
            #expect(unknown.isEmpty, "restored, though no client sent it: \(unknown.prefix(10))")
            #expect(
                try await Self.single(
                    restoredURL,
                    "SELECT (coalesce(max(recorded_at), '-infinity') <= '\(target.text)')::text FROM purchases")
                    == "true",
                "nothing recorded after T")
            let timeline = try await Self.single(restoredURL, "SELECT timeline_id::text FROM pg_control_checkpoint()")
            let reconcile = try await ServerProcess.reconcile(databaseURL: restoredURL)
            #expect(reconcile.passed, "shopledger reconcile on the restored cluster: \(reconcile.output)")
            try await restored.stop()

            // The copy becomes the primary, and serves.
            let promotion = try await Self.promote(
                restoredDirectory, repository: repository, timeline: timeline, scenario: scenario,
                sockets: &sockets, logger: logger,
                restored: beforeT.map(\.request.transactionId), leftOut: afterT.map(\.request.transactionId),
                firstBackup: firstBackup)

            scenario.report(
                "full backup \(ms(backupTook)); \(load.workers) clients for \(ms(loadTook)), \(attempts.count) purchases sent, "
                    + "\(primaryPurchases) recorded on the primary; T = \(target.text) (read in \(ms(target.after - target.before))); "
                    + "acknowledged before T: \(beforeT.count), all restored once; sent after T: \(afterT.count), none restored; "
                    + "in flight at T (either way): \(inFlight.count), \(inFlightRestored) restored; "
                    + "last segment archived \(ms(archiveTook)) after pg_switch_wal; "
                    + "pgbackrest restore \(ms(restoreTook)), recovery to T and promotion \(ms(recoveryTook)) (timeline \(timeline)); "
                    + "restored purchases: \(counts.count); shopledger reconcile: \(reconcile.passed ? "exit 0" : "FAILED"); "
                    + promotion
            )
        }
    }

    /// One value of one row, as text.
    static func single(_ url: String, _ sql: String) async throws -> String {
        try await FaultCluster.withClient(url: url) {
            try await $0.query(PostgresQuery(unsafeSQL: sql)).single().decode(String.self, at: 0)
        }
    }
}
