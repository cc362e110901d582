import ArgumentParser
import Foundation
import Logging
import Postgres

/// `shopledger standby start|stop|status`: a hot standby of the private PostgreSQL (PostgreSQL's own
/// streaming replication), for reports and `reconcile` off the primary, and for failover drills.
struct StandbyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "standby",
        abstract: "Run a hot standby (a streaming replica) of the private PostgreSQL under --data-dir.",
        subcommands: [
            StandbyStartCommand.self, StandbyStopCommand.self, StandbyStatusCommand.self, StandbyClusterCommand.self,
        ])
}

/// Where the primary (the private cluster) and its standby are.
struct StandbyOptions: ParsableArguments {
    @Option(help: "Folder of the private PostgreSQL cluster. Default: $SHOPLEDGER_DATA_DIR or .shopledger")
    var dataDir: String?

    @Option(
        parsing: .unconditional,
        help: "Port of the private cluster (the primary) on 127.0.0.1. Default: $SHOPLEDGER_DB_PORT or 25432")
    var dbPort: Int?

    @Option(
        parsing: .unconditional, help: "Port of the standby on 127.0.0.1. Default: $SHOPLEDGER_STANDBY_PORT or 25433")
    var standbyPort: Int?

    /// The name the standby gives the primary (its `cluster_name`, hence its walreceiver's
    /// `application_name`): what `synchronous_standby_names` lists.
    static let standbyName = "shopledger_standby"

    func validate() throws {
        _ = try Setting.integer(dbPort, "--db-port", "SHOPLEDGER_DB_PORT", in: 1...65535)
        _ = try Setting.integer(standbyPort, "--standby-port", "SHOPLEDGER_STANDBY_PORT", in: 1...65535)
    }

    func primary(logger: Logger) throws -> LocalPostgres {
        try DatabaseOptions.privateCluster(dataDir: dataDir, port: dbPort, logger: logger)
    }

    /// The standby: `<data-dir>/standby`; feedback to the primary keeps the rows a running report
    /// reads from being vacuumed away under it (fewer recovery conflicts, at the price of bloat on the
    /// primary while a report runs).
    func standby(logger: Logger) throws -> LocalPostgres {
        let port = try Setting.integer(standbyPort, "--standby-port", "SHOPLEDGER_STANDBY_PORT", in: 1...65535) ?? 25433
        return try LocalPostgres(
            options: .init(
                dataDirectory: DatabaseOptions.privateFolder(dataDir) + "/standby", port: port,
                settings: ["cluster_name": Self.standbyName, "hot_standby_feedback": "on"]),
            logger: logger)
    }

    /// A one-connection client on `database` of a running cluster.
    static func withClient<R>(
        _ running: LocalPostgres.Running, database: String = "postgres", logger: Logger,
        _ body: (PostgresClient) async throws -> R
    ) async throws -> R {
        try await PostgresClient.scoped(
            .init(
                connection: .init(url: running.url(database: database)), minimumConnections: 0, maximumConnections: 1),
            logger: logger, body)
    }

    /// Waits until the primary reports the standby streaming (and, when `synchronous`, as its sync
    /// standby); a usage error otherwise.
    static func awaitStreaming(on primary: PostgresClient, synchronous: Bool) async throws {
        do {
            try await StreamingReplication.awaitStreaming(standbyName, on: primary, synchronous: synchronous)
        } catch let error as StreamingReplication.NotStreaming {
            throw ValidationError(error.description)
        }
    }
}

struct StandbyStartCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "start",
        abstract:
            "Copy the private PostgreSQL with pg_basebackup (first time only) and start the copy as a hot standby that streams its changes.",
        discussion: """
            The private PostgreSQL is started too when it is not running, and left running. The standby keeps \
            its data under <data-dir>/standby and resumes streaming when started again; remove that folder to \
            copy the primary afresh. Reports and reconcile run against it with the --database-url this prints.
            """)

    @OptionGroup var options: StandbyOptions

    @OptionGroup var logging: LoggingOptions

    @Flag(
        help:
            "Make it a synchronous standby: the primary's commits wait until the standby has the WAL (an acknowledged purchase survives the primary's loss). While it is down, commits wait: `standby stop` turns this off first."
    )
    var synchronous = false

    func run() async throws {
        let logger = CommandLogging.logger()
        let primary = try await options.primary(logger: logger).start()
        let standby = try await options.standby(logger: logger).startStandby(of: primary)
        let inRecovery = try await StandbyOptions.withClient(standby, logger: logger) {
            try await StreamingReplication.isInRecovery($0)
        }
        guard inRecovery else {
            throw ValidationError(
                "the cluster on port \(standby.port) is not a standby (it was promoted?); remove its folder to copy the primary afresh"
            )
        }
        try await StandbyOptions.withClient(primary, logger: logger) {
            if synchronous {
                try await StreamingReplication.setSynchronousStandby(StandbyOptions.standbyName, on: $0)
            }
            try await StandbyOptions.awaitStreaming(on: $0, synchronous: synchronous)
        }
        print(
            "standby running on 127.0.0.1:\(standby.port)\(synchronous ? " (synchronous)" : ""), streaming from the private PostgreSQL on port \(primary.port)"
        )
        print(
            "reports and reconcile on it: --database-url '\(standby.url(database: DatabaseOptions.privateDatabaseName))'"
        )
    }
}

struct StandbyStopCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stop",
        abstract:
            "Stop the standby (its data is kept). A synchronous standby is first taken off the primary's list, so that the primary's commits do not wait for it."
    )

    @OptionGroup var options: StandbyOptions

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = CommandLogging.logger()
        if let primary = try await options.primary(logger: logger).attach() {
            try await StandbyOptions.withClient(primary, logger: logger) { client in
                let names = try await StreamingReplication.synchronousStandbyNames(on: client)
                if names.contains(StandbyOptions.standbyName) {
                    try await StreamingReplication.setSynchronousStandby(nil, on: client)
                    print("the primary no longer waits for the standby (synchronous_standby_names reset)")
                }
            }
        }
        try await options.standby(logger: logger).stop()
        print("standby stopped")
    }
}

struct StandbyStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Say how far the standby is behind the primary.")

    @OptionGroup var options: StandbyOptions

    @OptionGroup var logging: LoggingOptions

    @Flag(help: "Print the status as JSON.")
    var json = false

    func run() async throws {
        let logger = CommandLogging.logger()
        guard let standby = try await options.standby(logger: logger).attach() else {
            throw ValidationError("no standby runs under \(DatabaseOptions.privateFolder(options.dataDir))/standby")
        }
        let replay = try await StandbyOptions.withClient(standby, logger: logger) {
            try await StreamingReplication.replay(on: $0)
        }
        var behind: Int?
        if let primary = try await options.primary(logger: logger).attach(), let lsn = replay.lsn {
            behind = try await StandbyOptions.withClient(primary, logger: logger) {
                try await StreamingReplication.bytesBehind(lsn, on: $0)
            }
        }
        // To the second, in UTC: ISO 8601 for --json, "YYYY-MM-DD HH:MM:SS" in the sentence.
        let iso = replay.lastCommitAt.map { Date(timeIntervalSince1970: $0.timeIntervalSince1970.rounded(.down)) }
            .map { $0.formatted(.iso8601) }
        let replayed = replay.lsn
        let replayedAtISO = iso
        let replayedAt = iso.map { $0.replacingOccurrences(of: "T", with: " ").replacingOccurrences(of: "Z", with: "") }
        if json {
            try JSONOutput.print(
                StandbyStatusJSON(
                    port: standby.port, replayedLSN: replayed, lastReplayedCommitAt: replayedAtISO, behindBytes: behind
                ))
            return
        }
        var line = "standby on port \(standby.port): replayed WAL up to \(replayed ?? "nothing yet")"
        line += replayedAt.map { ", the last transaction replayed committed at \($0) UTC" } ?? ""
        line += behind.map { "; \($0) bytes of WAL behind the primary" } ?? ""
        print(line)
    }
}
