import Postgres

/// Adds an enabled webhook endpoint subscribed to every event type, as `shopledger webhooks add` would:
/// the ledger writes webhook events only while one is enabled (migration 0018). Nothing listens at the
/// address; the tests that use it read the outbox, not deliveries.
public func addListeningEndpoint(_ client: PostgresClient, url: String = "https://listener.example/hooks") async throws
{
    try await client.execute(
        """
        INSERT INTO webhook_endpoints (url, secret, created_by)
        VALUES (\(url)::text, 'whsec_listener_0123456789abcdef', 'test')
        """)
}
