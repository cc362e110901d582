import Foundation
import Postgres

extension WebhookStore {
    /// The newest delivery attempts, newest first, at most `limit` (1 to 1,000); only `endpointId`'s
    /// when given. What the console's webhook page lists (an event's own attempts: ``attempts(of:)``).
    public func recentAttempts(limit: Int = 50, endpointId: Int64? = nil) async throws -> [WebhookAttempt] {
        try await client.query(
            """
            SELECT endpoint_id, event_id, attempt, started_at, duration_ms, status_code, error, outcome
            FROM webhook_attempts
            WHERE (\(endpointId)::bigint IS NULL OR endpoint_id = \(endpointId)::bigint)
            ORDER BY attempt_id DESC LIMIT \(max(1, min(limit, 1000)))
            """
        ).map { row in
            let (endpointId, eventId, attempt, startedAt, duration, status, error, outcome) = try row.decode(
                (Int64, Int64, Int, Date, Int, Int?, String?, String).self)
            return WebhookAttempt(
                endpointId: endpointId, eventId: eventId, attempt: attempt, startedAt: startedAt,
                durationMilliseconds: duration, statusCode: status, error: error, outcome: outcome)
        }
    }
}
