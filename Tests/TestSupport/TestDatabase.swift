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
    let client = PostgresClient(
        configuration: .init(connection: .init(url: url), minimumConnections: 0, maximumConnections: maximumConnections),
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
