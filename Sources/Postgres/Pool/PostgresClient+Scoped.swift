import Logging

extension PostgresClient {
    /// Runs `body` with a client of its own, shut down after `body` returns or throws: for a short
    /// task on another database, role or cluster (a standby, a test's read-only role) that must not
    /// leave connections open.
    public static func scoped<R>(
        _ configuration: Configuration, logger: Logger = Logger(label: "shopledger.postgres"),
        _ body: (PostgresClient) async throws -> R
    ) async throws -> R {
        let client = PostgresClient(configuration: configuration, logger: logger)
        do {
            let result = try await body(client)
            await client.shutdown()
            return result
        } catch {
            await client.shutdown()
            throw error
        }
    }
}
