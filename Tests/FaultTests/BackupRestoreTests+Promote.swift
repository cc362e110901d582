import Foundation
import Logging
import NIOHTTP1
import Postgres
import TestSupport
import Testing

/// The restored copy made the primary (docs/operations.md, "Promoting the restored copy"): archiving
/// turned on into the same stanza, the new timeline's history pushed, a new full backup taken and
/// recorded, the schema checked, and `shopledger serve` started on it.
extension BackupRestoreTests {
    /// `shop_backup_last_success_timestamp_seconds` on a server's /metrics once it is `expected`, or the
    /// last value seen after 10 s: the server reads it at start, beside answering /readyz, not before.
    static func lastBackupMetric(
        _ http: FaultHTTP, _ server: ServerProcess, expected: Double
    ) async throws -> Double? {
        let started = ContinuousClock.now
        while true {
            let answer = try await http.send(.GET, server.baseURL + "/metrics")
            let value = answer.body.split(separator: "\n")
                .first { $0.hasPrefix("shop_backup_last_success_timestamp_seconds ") }
                .flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
            if value == expected || ContinuousClock.now - started > .seconds(10) { return value }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Promotes the copy in `directory` (already out of recovery, stopped) as the procedure says and
    /// checks it serves: `restored` are purchases it must have, `leftOut` ones it must not, and
    /// `firstBackup` the backup recorded before T (so in the copy too). Returns the report's words.
    static func promote(
        _ directory: String, repository: BackupRepository, timeline: String, scenario: FaultScenario,
        sockets: inout [String], logger: Logger, restored: [String], leftOut: [String], firstBackup: String
    ) async throws -> String {
        let port = try TestCluster.freePort()
        let started = ContinuousClock.now
        // 1. archive_command pointed at a configuration whose pg1-path is the copy (ALTER SYSTEM, as on a
        //    host), then a restart with archive_mode on: it is read at start only.
        var copy = try LocalPostgres(
            options: .init(dataDirectory: directory, port: port, durable: true, settings: ["archive_mode": "off"]),
            logger: logger)
        var running = try await copy.start()
        sockets.append(running.socketDirectory)
        let promoted = try repository.pointed(at: directory, port: port, socketDirectory: running.socketDirectory)
        try await FaultCluster.withClient(url: running.url(database: "postgres")) { client in
            try await client.query(
                PostgresQuery(unsafeSQL: "ALTER SYSTEM SET archive_command = '\(promoted.archiveCommand)'"))
        }
        try await copy.stop()
        copy = try LocalPostgres(
            options: .init(
                dataDirectory: directory, port: port, durable: true,
                settings: ["archive_mode": "on", "wal_level": "replica"]),
            logger: logger)
        running = try await copy.start()
        try #require(running.socketDirectory == promoted.socketDirectory)
        let url = running.url(database: "postgres")
        let archiving = try await single(
            url, "SELECT current_setting('archive_mode') || ' ' || current_setting('archive_command')")
        #expect(archiving == "on \(promoted.archiveCommand)", "\(archiving)")

        // 2. The history file of the copy's timeline, written while archiving was off, into the repository:
        //    a later restore that follows the latest timeline finds this one's start there.
        let history = String(format: "%08X.history", try #require(Int(timeline)))
        try await promoted.run(["archive-push", directory + "/pg_wal/" + history])
        // 3. check (archive_command delivers from the copy), a new full backup on the new timeline, recorded.
        try await promoted.run(["check"])
        let backupStarted = ContinuousClock.now
        try await promoted.run(["backup", "--type=full"])
        let backupTook = ContinuousClock.now - backupStarted
        let recorded = try await promoted.record(databaseURL: url)
        #expect(
            recorded.contains("1 recorded now, 1 recorded before"), "the copy had \(firstBackup) already: \(recorded)")
        let labels = try await FaultCluster.withClient(url: url) { client in
            try await client.query("SELECT label FROM backups ORDER BY stopped_at").map {
                try $0.decode(String.self, at: 0)
            }
        }
        #expect(labels.count == 2 && labels.first == firstBackup, "\(labels)")
        let newBackupStop = try await single(
            url, "SELECT extract(epoch FROM max(stopped_at))::bigint::text FROM backups")
        let info = try await promoted.run(["info"])
        #expect(info.contains("status: ok"), "\(info)")

        // 4. The migration check: every migration this build knows is applied, nothing newer.
        let (migrateStatus, migrateOutput) = try await Spawned.run([
            try ServerProcess.binary(), "migrate", "--status", "--database-url", url,
        ])
        #expect(migrateStatus == .exited(0), "\(migrateOutput)")
        let statusLines = migrateOutput.split(separator: "\n").filter {
            $0.hasPrefix("applied") || $0.hasPrefix("pending")
        }
        #expect(
            !statusLines.isEmpty && statusLines.allSatisfy { $0.hasPrefix("applied") }
                && migrateOutput.contains("0019_backups.sql"),
            "\(migrateOutput)")

        // 5. serve on it: ready, the restored purchases there, those after T not, the new backup exported.
        let server = try await scenario.startServer(databaseURL: url)
        let ready = ContinuousClock.now - started
        let admin = [("Authorization", "Bearer \(FaultFixtures.adminToken)")]
        var served = 0
        for transaction in restored.prefix(20) {
            let answer = try await scenario.http.send(
                .GET, server.baseURL + "/api/v1/admin/purchases/\(transaction)", headers: admin)
            #expect(
                answer.status == 200 && answer.body.contains(transaction),
                "\(transaction): \(answer.status) \(answer.body)")
            if answer.status == 200 { served += 1 }
        }
        for transaction in leftOut.prefix(20) {
            let answer = try await scenario.http.send(
                .GET, server.baseURL + "/api/v1/admin/purchases/\(transaction)", headers: admin)
            #expect(answer.status == 404, "after T, yet served: \(transaction): \(answer.status) \(answer.body)")
        }
        #expect(served >= min(20, restored.count) && served > 0)
        let expected = try #require(Double(newBackupStop))
        #expect(try await lastBackupMetric(scenario.http, server, expected: expected) == expected)
        server.kill()
        try await copy.stop()
        return "promoted: archiving on, new full backup \(ms(backupTook)) recorded (\(labels.count) in the copy), "
            + "migrate --status all applied, \(served) restored purchases served, \(min(20, leftOut.count)) after T "
            + "answered 404; from starting the copy to serve ready \(ms(ready))"
    }
}
