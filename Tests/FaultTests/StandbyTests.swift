import Foundation
import Logging
import NIOCore
import Postgres
import TestSupport
import Testing

/// `shopledger standby start|status|stop` on a private cluster, with the real binary: the standby is
/// a streaming replica, and the read tools give the same answers on it as on the primary.
@Suite("Faults: a hot standby of the private PostgreSQL")
struct StandbyTests {
    @Test(
        "a synchronous standby made by shopledger standby start keeps up with a purchase load; report and reconcile on it write the primary's bytes; stop frees the primary and leaves nothing running",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(5)))
    func standbyWritesThePrimarysBytes() async throws {
        try await FaultScenario.run("standby") { scenario in
            let folder = scenario.folder + "/private"
            let primaryPort = try TestCluster.freePort()
            let standbyPort = try TestCluster.freePort()
            let cluster = ["--data-dir", folder, "--db-port", String(primaryPort)]
            let standbyOptions = cluster + ["--standby-port", String(standbyPort)]
            let primaryURL = "postgresql://postgres@127.0.0.1:\(primaryPort)/shopledger"
            let standbyURL = "postgresql://postgres@127.0.0.1:\(standbyPort)/shopledger"

            // The private cluster is made (and the schema applied) by `migrate`, which stops it again.
            let migrated = try await Self.shopledger(["migrate"] + cluster)
            #expect(migrated.passed, "\(migrated.output)")
            // Synchronous: every purchase acknowledged below is on the standby too when it is answered.
            let started = try await Self.shopledger(["standby", "start", "--synchronous"] + standbyOptions)
            try #require(started.passed, "standby start: \(started.output)")
            #expect(started.output.contains("--database-url"), "\(started.output)")
            let replication = try await Self.single(
                primaryURL, "SELECT string_agg(application_name || ' ' || sync_state, ', ') FROM pg_stat_replication")
            #expect(replication == "shopledger_standby sync", "pg_stat_replication: \(replication)")
            let sockets = ["postgres", "standby"].compactMap {
                FaultResources.socketFolder(dataDirectory: folder + "/" + $0)
            }
            defer { for socket in sockets { try? FileManager.default.removeItem(atPath: socket) } }

            let server = try await scenario.startServer(databaseURL: primaryURL)
            let load = PurchaseLoad(
                scenario: "standby", workers: FaultSettings.clients(8), baseURL: server.baseURL,
                requestTimeout: .seconds(10))
            try await load.registerUsers(scenario.http)
            let record = LoadRecord()
            let stop = StopSignal()
            let refunds = RefundLoad(baseURL: server.baseURL)
            let loadStarted = ContinuousClock.now
            let notifications = try await withThrowingTaskGroup(of: [NotificationAttempt].self) { group in
                group.addTask {
                    await load.run(scenario.http, until: stop, record: record)
                    return []
                }
                group.addTask { await refunds.run(scenario.http, purchases: record, until: stop) }
                try await record.waitUntilAcknowledged(FaultSettings.acknowledgedBeforeFault, since: loadStarted)
                stop.set()
                return try await group.reduce(into: []) { $0 += $1 }
            }
            server.kill()

            // Caught up: the standby has replayed everything the primary has written.
            let stoppedAt = ContinuousClock.now
            let primaryLSN = try await Self.single(primaryURL, "SELECT pg_current_wal_lsn()::text")
            var behind = Int.max
            while behind > 0, ContinuousClock.now - stoppedAt < .seconds(30) {
                behind =
                    Int(
                        try await Self.single(
                            standbyURL,
                            "SELECT pg_wal_lsn_diff('\(primaryLSN)'::pg_lsn, pg_last_wal_replay_lsn())::bigint::text")
                    ) ?? Int.max
                if behind > 0 { try await Task.sleep(for: .milliseconds(20)) }
            }
            let caughtUpIn = ContinuousClock.now - stoppedAt
            #expect(behind <= 0, "the standby is \(behind) bytes of WAL behind after 30 s")
            #expect(try await Self.single(standbyURL, "SELECT pg_is_in_recovery()::text") == "true")
            let status = try await Self.shopledger(["standby", "status"] + standbyOptions)
            #expect(status.passed && status.output.contains("bytes of WAL behind"), "\(status.output)")
            let json = try await ShopLedgerRun.run(
                ["standby", "status", "--json"] + standbyOptions, separatingErrors: true)
            let standing = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
            #expect(
                json.status == 0 && (standing?["behind_bytes"] as? Int).map { $0 >= 0 } == true,
                "\(json.output) \(json.errors)")
            #expect(standing?["replayed_lsn"] is String, "\(json.output)")

            // The same commands on both: the same bytes.
            var compared: [String] = []
            let reports: [[String]] = [
                ["report", "daily", "--date", "2025-11-13", "--reconcile", "full"],
                ["report", "range", "--from", "2025-11-01", "--to", "2026-12-31", "--by", "month"],
            ]
            for (index, report) in reports.enumerated() {
                var written: [[String: Data]] = []
                for (name, url) in [("primary", primaryURL), ("standby", standbyURL)] {
                    let out = "\(folder)/reports-\(index)-\(name)"
                    let made = try await Self.shopledger(report + ["--out", out, "--database-url", url])
                    #expect(made.passed, "\(name): \(made.output)")
                    #expect(
                        made.output.contains("read from a hot standby") == (name == "standby"),
                        "\(name) says whether it read a standby: \(made.output)")
                    written.append(try Self.files(under: out))
                }
                #expect(!written[0].isEmpty && written[0] == written[1], "\(report): the standby's files differ")
                compared += written[0].map { "\($0.key) \($0.value.count) B" }
            }
            let onPrimary = try await ServerProcess.reconcile(databaseURL: primaryURL)
            let onStandby = try await ServerProcess.reconcile(databaseURL: standbyURL)
            #expect(onPrimary.passed && onStandby.passed, "primary: \(onPrimary.output)\nstandby: \(onStandby.output)")
            #expect(onPrimary.output == onStandby.output, "reconcile says the same on both")

            let stopped = try await Self.shopledger(["standby", "stop"] + standbyOptions)
            #expect(stopped.passed, "\(stopped.output)")
            // The primary no longer waits for it: a commit that needs the WAL flushed returns.
            let names = try await Self.single(primaryURL, "SHOW synchronous_standby_names")
            #expect(names == "", "synchronous_standby_names after stop: \(names)")
            if names == "" { #expect(try await Self.single(primaryURL, "SELECT txid_current()::text") != "") }
            #expect(!FileManager.default.fileExists(atPath: folder + "/standby/postmaster.pid"), "the standby stopped")
            try await PostgresBinaries.pgCtl(["-D", folder + "/postgres", "-m", "fast", "-w", "stop"])

            scenario.report(
                "primary + standby, \(load.workers) clients for \(ms(stoppedAt - loadStarted)): "
                    + "\(record.acknowledgedCount) purchases and \(notifications.count) refunds acknowledged; "
                    + "standby caught up \(ms(caughtUpIn)) after the load stopped; "
                    + "report files byte-identical on the standby: \(compared.sorted().joined(separator: ", ")); "
                    + "reconcile output identical (\(onStandby.output.utf8.count) B); standby status: \(status.output.split(separator: "\n").last ?? "")"
            )
        }
    }

    static func shopledger(_ arguments: [String]) async throws -> (passed: Bool, output: String) {
        let (status, output) = try await Spawned.run([try ServerProcess.binary()] + arguments, timeout: .seconds(120))
        return (status == .exited(0), output)
    }

    /// One value of one row, as text.
    static func single(_ url: String, _ sql: String) async throws -> String {
        try await FaultCluster.withClient(url: url) {
            try await $0.query(PostgresQuery(unsafeSQL: sql)).single().decode(String.self, at: 0)
        }
    }

    /// Every file under `folder`, by its path relative to it.
    static func files(under folder: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for path in FileManager.default.subpaths(atPath: folder) ?? [] {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder + "/" + path, isDirectory: &isFolder),
                !isFolder.boolValue
            else { continue }
            files[path] = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + path))
        }
        return files
    }
}
