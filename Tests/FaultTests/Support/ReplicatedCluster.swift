import Foundation
import Logging
import Postgres
import TestSupport

/// A scenario's cluster (the primary) with a streaming standby of its own, made the way
/// `shopledger standby start` makes one (`LocalPostgres.startStandby`: pg_basebackup, then a hot
/// standby), and listed in the primary's `synchronous_standby_names`: a commit is acknowledged only
/// once the standby has flushed its WAL. Servers reach it through one multi-host conninfo.
struct ReplicatedCluster: Sendable {
    let primary: FaultCluster
    let standby: LocalPostgres
    let standbyRunning: LocalPostgres.Running
    static let standbyName = "fault_standby"

    var standbyDirectory: String { standby.options.dataDirectory }

    /// The standby over TCP (the database the scenario's cluster uses).
    var standbyURL: String {
        "postgresql://\(standbyRunning.superuser)@127.0.0.1:\(standbyRunning.port)/postgres"
    }

    /// Both clusters, the primary first, for a session that must write: libpq tries each host in turn
    /// and keeps the first that accepts a connection and is not in recovery. After a failover the same
    /// string finds the promoted standby; nothing in the server's configuration changes.
    var multiHostURL: String {
        "host=127.0.0.1,127.0.0.1 port=\(primary.local.options.port),\(standbyRunning.port) dbname=postgres "
            + "user=\(standbyRunning.superuser) target_session_attrs=read-write"
    }

    /// Copies `primary` into `folder/standby`, starts the copy as its synchronous standby and waits
    /// until the primary reports it `sync`.
    static func start(primary: FaultCluster, folder: String) async throws -> ReplicatedCluster {
        var logger = Logger(label: "shopledger.fault-standby")
        logger.logLevel = .warning
        let standby = try LocalPostgres(
            options: .init(
                dataDirectory: folder + "/standby", port: try TestCluster.freePort(), durable: true,
                settings: ["cluster_name": standbyName]),
            logger: logger)
        let primaryRunning = try await primary.local.start()
        let running = try await standby.startStandby(of: primaryRunning)
        let cluster = ReplicatedCluster(primary: primary, standby: standby, standbyRunning: running)
        // Set after the copy was made: the standby, once promoted, must not wait for a standby of its own.
        try await cluster.setSynchronous(true)
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let state = try await primary.withClient { client in
                try await client.query(
                    "SELECT sync_state FROM pg_stat_replication WHERE application_name = \(standbyName)"
                ).first?.decode(String.self, at: 0)
            }
            if state == "sync" { return cluster }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw FaultTestError("the standby did not become synchronous within 30 s")
    }

    /// Lists the standby in the primary's `synchronous_standby_names`, or empties it.
    func setSynchronous(_ synchronous: Bool) async throws {
        try await primary.withClient { client in
            try await client.query(
                PostgresQuery(
                    unsafeSQL: synchronous
                        ? "ALTER SYSTEM SET synchronous_standby_names = '\(Self.standbyName)'"
                        : "ALTER SYSTEM RESET synchronous_standby_names"))
            try await client.query("SELECT pg_reload_conf()")
        }
    }

    /// `pg_ctl promote`: the standby ends recovery and accepts writes; returns when it does.
    func promoteStandby() async throws {
        try await PostgresBinaries.pgCtl(["-D", standbyDirectory, "-w", "-t", "60", "promote"])
    }

    /// SIGKILL to every process of the standby.
    func killStandby() throws {
        _ = try FaultCluster.signalEveryProcess(SIGKILL, dataDirectory: standbyDirectory)
    }

    /// A short-lived client on the standby.
    func withStandbyClient<R: Sendable>(_ body: (PostgresClient) async throws -> R) async throws -> R {
        try await FaultCluster.withClient(url: standbyURL, body)
    }

    /// The standby's socket folder (`LocalPostgres` makes one under /tmp and leaves it).
    func removeSocketFolder() {
        guard standbyRunning.socketDirectory.hasPrefix("/tmp/.shopledger-") else { return }
        try? FileManager.default.removeItem(atPath: standbyRunning.socketDirectory)
    }
}
