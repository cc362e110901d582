import ArgumentParser
import Foundation
import Ledger
import Logging
import Postgres

/// Where the database is: a configured URL, or the private cluster under `.shopledger/`.
struct DatabaseOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "PostgreSQL URL or libpq conninfo. Default: $SHOPLEDGER_DATABASE_URL; when neither is set, a private cluster under --data-dir.",
        valueName: "url"))
    var databaseURL: String?

    @Option(help: "Folder of the private PostgreSQL cluster. Default: $SHOPLEDGER_DATA_DIR or .shopledger")
    var dataDir: String?

    @Option(help: "Port of the private cluster on 127.0.0.1. Default: $SHOPLEDGER_DB_PORT or 54320")
    var dbPort: Int?

    @Option(help: "Maximum database connections. Default: $SHOPLEDGER_POOL_SIZE or 8")
    var poolSize: Int?

    func validate() throws {
        if let dbPort, !(1...65535).contains(dbPort) { throw ValidationError("--db-port must be between 1 and 65535") }
        if let poolSize, !(1...200).contains(poolSize) { throw ValidationError("--pool-size must be between 1 and 200") }
    }

    var resolvedPoolSize: Int { poolSize ?? Environment.int("SHOPLEDGER_POOL_SIZE") ?? 8 }

    /// The private cluster, when no database URL is configured.
    func localCluster(logger: Logger) throws -> LocalPostgres? {
        if let url = databaseURL ?? Environment.string("SHOPLEDGER_DATABASE_URL"), !url.isEmpty { return nil }
        let folder = dataDir ?? Environment.string("SHOPLEDGER_DATA_DIR") ?? ".shopledger"
        let absolute = URL(fileURLWithPath: folder, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)).standardizedFileURL.path
        let port = dbPort ?? Environment.int("SHOPLEDGER_DB_PORT") ?? 54320
        return try LocalPostgres(options: .init(dataDirectory: absolute + "/postgres", port: port), logger: logger)
    }

    /// Connects (starting the private cluster if that is the configuration), migrates unless told
    /// not to, runs `body`, and stops the private cluster again if this call started it.
    func withClient<R>(
        migrate: Bool = true,
        logger: Logger = Logger(label: "shopledger"),
        _ body: (PostgresClient) async throws -> R
    ) async throws -> R {
        let database = try await DatabaseConnection.open(self, logger: logger)
        let client = PostgresClient(configuration: database.poolConfiguration(maximumConnections: resolvedPoolSize), logger: logger)
        do {
            if migrate { try await LedgerSchema.migrator(logger: logger).migrate(client) }
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

    static let databaseName = "shopledger"

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
        return DatabaseConnection(url: running.url(database: databaseName), cluster: cluster, startedCluster: running.startedHere)
    }

    func poolConfiguration(maximumConnections: Int) -> PostgresClient.Configuration {
        .init(connection: .init(url: url), minimumConnections: min(2, maximumConnections), maximumConnections: maximumConnections)
    }

    func close() async throws {
        if startedCluster, let cluster { try await cluster.stop() }
    }

    private static func createDatabaseIfMissing(url: String, logger: Logger) async throws {
        let admin = PostgresClient(configuration: .init(connection: .init(url: url), minimumConnections: 0, maximumConnections: 1), logger: logger)
        do {
            let exists = try await admin.query("SELECT 1 FROM pg_database WHERE datname = \(databaseName)").count > 0
            if !exists {
                do {
                    try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(PostgresQuery.quoteIdentifier(databaseName))"))
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

/// `SHOPLEDGER_*` environment variables, read in one place.
enum Environment {
    static func string(_ name: String) -> String? {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
        return value
    }

    static func int(_ name: String) -> Int? {
        string(name).flatMap { Int($0) }
    }

    /// `1`, `true` or `yes` (any case) turn a switch on.
    static func flag(_ name: String) -> Bool {
        guard let value = string(name)?.lowercased() else { return false }
        return ["1", "true", "yes"].contains(value)
    }
}
