import Logging
import Postgres

/// A database of its own for one test, created from the migrated template and dropped afterwards.
///
///     try await withTestDatabase { db in
///         let rows = try await db.client.query("SELECT count(*) FROM catalog_items")
///     }
public struct TestDatabase: Sendable {
    public let name: String
    public let url: String
    public let client: PostgresClient
}

public func withTestDatabase<R: Sendable>(
    _ label: String = #function,
    maximumConnections: Int = 8,
    _ body: (TestDatabase) async throws -> R
) async throws -> R {
    let cluster = TestCluster.shared
    let name = try await cluster.createDatabase(prefix: label)
    let url = try await cluster.url(database: name)
    // Tests check what happens, not how fast: on a loaded 2-core machine 200 tasks queueing for a few
    // connections can wait longer than the 10 s production default, so leases here wait up to 2 minutes.
    let client = PostgresClient(
        configuration: .init(
            connection: .init(url: url), minimumConnections: 0, maximumConnections: maximumConnections,
            leaseTimeout: .seconds(120)),
        logger: cluster.logger)
    let database = TestDatabase(name: name, url: url, client: client)
    do {
        let result = try await body(database)
        await client.shutdown()
        await cluster.dropDatabase(name)
        return result
    } catch {
        await client.shutdown()
        await cluster.dropDatabase(name)
        throw error
    }
}

/// Runs `body` with a client of its own on `url` (another role, options, a standby), shut down after.
public func withClient<R: Sendable>(
    url: String, maximumConnections: Int = 2, logger: Logger = Logger(label: "shopledger.test-client"),
    _ body: (PostgresClient) async throws -> R
) async throws -> R {
    try await PostgresClient.scoped(
        .init(connection: .init(url: url), minimumConnections: 0, maximumConnections: maximumConnections),
        logger: logger, body)
}
