import ArgumentParser
import BuildInfo
import Foundation
import Ledger
import Logging
import Postgres

/// Where the database is: a configured URL, or the private cluster under `.shopledger/`.
struct DatabaseOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "PostgreSQL URL or libpq conninfo. Default: $SHOPLEDGER_DATABASE_URL; when neither is set, a private cluster under --data-dir.",
            valueName: "url"))
    var databaseURL: String?

    @Option(help: "Folder of the private PostgreSQL cluster. Default: $SHOPLEDGER_DATA_DIR or .shopledger")
    var dataDir: String?

    @Option(
        parsing: .unconditional,
        help: "Port of the private cluster on 127.0.0.1. Default: $SHOPLEDGER_DB_PORT or 25432")
    var dbPort: Int?

    @Option(parsing: .unconditional, help: "Maximum database connections. Default: $SHOPLEDGER_POOL_SIZE or 8")
    var poolSize: Int?

    @Option(
        name: .customLong("statement-timeout"), parsing: .unconditional,
        help: ArgumentHelp(
            "Seconds a statement may run before PostgreSQL cancels it (0: no limit). Default: $SHOPLEDGER_STATEMENT_TIMEOUT, else 15 for serve and no limit for the other commands.",
            valueName: "seconds"))
    var statementTimeout: Double?

    @Option(
        name: .customLong("idle-in-transaction-timeout"), parsing: .unconditional,
        help: ArgumentHelp(
            "Seconds a session may sit idle in an open transaction before PostgreSQL ends it (0: no limit). Default: $SHOPLEDGER_IDLE_IN_TRANSACTION_TIMEOUT, else 15 for serve and no limit for the other commands.",
            valueName: "seconds"))
    var idleInTransactionTimeout: Double?

    @Option(
        name: .customLong("dead-peer-timeout"), parsing: .unconditional,
        help: ArgumentHelp(
            "Seconds after which a silent TCP connection to PostgreSQL counts as dead (keepalives and tcp_user_timeout; not used on Unix sockets; 0: the system's defaults). Default: $SHOPLEDGER_DEAD_PEER_TIMEOUT or 10",
            valueName: "seconds"))
    var deadPeerTimeout: Double?

    func validate() throws {
        // A URL libpq cannot parse is refused here, naming where it came from, not at the first query.
        if let url = databaseURL ?? Environment.string("SHOPLEDGER_DATABASE_URL"),
            let problem = ConnectionConfiguration.urlProblem(url)
        {
            throw ValidationError("\(databaseURL == nil ? "SHOPLEDGER_DATABASE_URL" : "--database-url"): \(problem)")
        }
        _ = try Setting.integer(dbPort, "--db-port", "SHOPLEDGER_DB_PORT", in: 1...65535)
        _ = try resolvedPoolSize
        _ = try sessionTimeouts(serving: true)
    }

    /// The server-side timeouts and the dead-peer bound of the pool; `serving` picks serve's defaults.
    func sessionTimeouts(
        serving: Bool
    ) throws -> (statement: Duration?, idleInTransaction: Duration?, deadPeer: Duration?) {
        let fallback: Double = serving ? 15 : 0
        let statement = try Self.seconds(
            statementTimeout, "SHOPLEDGER_STATEMENT_TIMEOUT", default: fallback, name: "--statement-timeout")
        let idle = try Self.seconds(
            idleInTransactionTimeout, "SHOPLEDGER_IDLE_IN_TRANSACTION_TIMEOUT", default: fallback,
            name: "--idle-in-transaction-timeout")
        let deadPeer = try Self.seconds(
            deadPeerTimeout, "SHOPLEDGER_DEAD_PEER_TIMEOUT", default: 10, name: "--dead-peer-timeout")
        return (statement, idle, deadPeer)
    }

    /// nil for 0 (no limit).
    private static func seconds(
        _ flag: Double?, _ variable: String, default fallback: Double, name: String
    ) throws -> Duration? {
        let value = try Setting.seconds(flag, name, variable, in: 0...86_400) ?? fallback
        return value == 0 ? nil : .milliseconds(Int64((value * 1000).rounded()))
    }

    var resolvedPoolSize: Int {
        get throws { try Setting.integer(poolSize, "--pool-size", "SHOPLEDGER_POOL_SIZE", in: 1...200) ?? 8 }
    }

    /// The private cluster, when no database URL is configured.
    func localCluster(logger: Logger) throws -> LocalPostgres? {
        if let url = databaseURL ?? Environment.string("SHOPLEDGER_DATABASE_URL"), !url.isEmpty { return nil }
        return try Self.privateCluster(dataDir: dataDir, port: dbPort, logger: logger)
    }

    /// The private cluster's folder (`--data-dir`, `$SHOPLEDGER_DATA_DIR` or `.shopledger`), absolute.
    static func privateFolder(_ dataDir: String?) -> String {
        let folder = dataDir ?? Environment.string("SHOPLEDGER_DATA_DIR") ?? ".shopledger"
        return URL(
            fileURLWithPath: folder, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        ).standardizedFileURL.path
    }

    /// The private cluster under `privateFolder(dataDir)`, on `port` or `$SHOPLEDGER_DB_PORT` or 25432.
    static func privateCluster(dataDir: String?, port: Int?, logger: Logger) throws -> LocalPostgres {
        let port = try Setting.integer(port, "--db-port", "SHOPLEDGER_DB_PORT", in: 1...65535) ?? 25432
        return try LocalPostgres(
            options: .init(dataDirectory: privateFolder(dataDir) + "/postgres", port: port), logger: logger)
    }

    /// The database `shopledger` creates in its private cluster.
    static let privateDatabaseName = "shopledger"

    /// What a command may do to the schema. Only `migrate` and `serve` change it.
    enum SchemaUse {
        /// `serve`: apply pending migrations first, a table lock waited for at most `lockTimeout`.
        case migrate(lockTimeout: Duration?)
        /// Read-only tools (and `seed`): the schema must be current; nothing is written to check it,
        /// so they work on a read-only connection or a hot standby.
        case requireCurrent
        /// The `migrate` command, which does the work itself.
        case untouched
    }

    /// How long `serve`'s migrations wait for a table lock before failing (not blocking traffic
    /// behind a migration stuck behind a long transaction).
    static let serveMigrationLockTimeout: Duration = .seconds(5)

    /// Connects (starting the private cluster if that is the configuration), deals with the schema
    /// as `schema` says, runs `body`, and stops the private cluster again if this call started it.
    ///
    /// - Parameter serving: the pool is `serve`'s: its statement and idle-in-transaction timeouts
    ///   default to 15 s instead of none.
    func withClient<R>(
        schema: SchemaUse,
        serving: Bool = false,
        logger: Logger = Logger(label: "shopledger"),
        _ body: (PostgresClient) async throws -> R
    ) async throws -> R {
        // Every setting is checked before the cluster or the network is touched.
        let timeouts = try sessionTimeouts(serving: serving)
        let poolSize = try resolvedPoolSize
        let database = try await DatabaseConnection.open(self, logger: logger)
        var configuration = database.poolConfiguration(maximumConnections: poolSize)
        configuration.connection.statementTimeout = timeouts.statement
        configuration.connection.idleInTransactionSessionTimeout = timeouts.idleInTransaction
        configuration.connection.deadPeerTimeout = timeouts.deadPeer
        let client = PostgresClient(configuration: configuration, logger: logger)
        do {
            switch schema {
            case .migrate(let lockTimeout):
                try await LedgerSchema.migrator(lockTimeout: lockTimeout, release: BuildInfo.version, logger: logger)
                    .migrate(client)
            case .requireCurrent:
                try await retryingRecoveryConflicts(logger: logger) {
                    try await LedgerSchema.migrator(release: BuildInfo.version, logger: logger).requireCurrent(client)
                }
            case .untouched:
                break
            }
            let result = try await body(client)
            await client.shutdown()
            try await database.close()
            return result
        } catch {
            await client.shutdown()
            try? await database.close()
            throw error
        }
    }
}

/// An opened database (used by `withClient` only): its URL, and the private cluster to stop afterwards when this process started it.
private struct DatabaseConnection {
    let url: String
    let cluster: LocalPostgres?
    let startedCluster: Bool

    static let databaseName = DatabaseOptions.privateDatabaseName

    static func open(_ options: DatabaseOptions, logger: Logger) async throws -> DatabaseConnection {
        guard let cluster = try options.localCluster(logger: logger) else {
            let url = options.databaseURL ?? Environment.string("SHOPLEDGER_DATABASE_URL") ?? ""
            return DatabaseConnection(url: url, cluster: nil, startedCluster: false)
        }
        let running = try await cluster.start()
        do {
            try await createDatabaseIfMissing(url: running.url(database: "postgres"), logger: logger)
        } catch {
            if running.startedHere { try? await cluster.stop() }
            throw error
        }
        return DatabaseConnection(
            url: running.url(database: databaseName), cluster: cluster, startedCluster: running.startedHere)
    }

    func poolConfiguration(maximumConnections: Int) -> PostgresClient.Configuration {
        .init(
            connection: .init(url: url), minimumConnections: min(2, maximumConnections),
            maximumConnections: maximumConnections)
    }

    func close() async throws {
        if startedCluster, let cluster { try await cluster.stop() }
    }

    private static func createDatabaseIfMissing(url: String, logger: Logger) async throws {
        let admin = PostgresClient(
            configuration: .init(connection: .init(url: url), minimumConnections: 0, maximumConnections: 1),
            logger: logger)
        do {
            let exists = try await admin.query("SELECT 1 FROM pg_database WHERE datname = \(databaseName)").count > 0
            if !exists {
                do {
                    try await admin.query(
                        PostgresQuery(unsafeSQL: "CREATE DATABASE \(PostgresQuery.quoteIdentifier(databaseName))"))
                    logger.info("created database \(databaseName)")
                } catch let error as PostgresError where error.sqlState == SQLState("42P04") {
                    // Created meanwhile by another process: fine.
                }
            }
        } catch {
            await admin.shutdown()
            throw error
        }
        await admin.shutdown()
    }
}
