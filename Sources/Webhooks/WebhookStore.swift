import Foundation
import Postgres

/// The webhook tables (migration 0016): endpoints, replays, and the delivery queue's claims and outcomes.
/// The outbox itself is written by the ledger's triggers, in the transaction of each event.
public struct WebhookStore: Sendable {
    let client: PostgresClient

    /// Failed attempts in a row after which an endpoint is marked failing.
    public static let failingThreshold = 10
    /// Most events one replay may queue.
    public static let replayLimit = 1_000_000

    public init(client: PostgresClient) {
        self.client = client
    }

    // MARK: Endpoints

    /// Adds an endpoint, enabled; it receives events recorded from now on (a replay sends older ones).
    /// - Throws: ``WebhookError`` (`.invalidInput`) with nothing written.
    public func addEndpoint(
        url: WebhookURL, events: [WebhookEventType]?, secret: String, description: String = "", actor: String
    ) async throws -> WebhookEndpoint {
        try Self.checkSecret(secret)
        try Self.checkActor(actor)
        guard description.count <= 200, !description.unicodeScalars.contains(where: Self.isControl) else {
            throw WebhookError(
                .invalidInput, "the description must be at most 200 characters without control characters")
        }
        let id = try await client.query(
            """
            INSERT INTO webhook_endpoints (url, events, secret, description, created_by)
            VALUES (\(url.text)::text, \(events?.map(\.rawValue))::text[], \(secret)::text, \(description)::text,
                    \(actor)::text)
            RETURNING endpoint_id
            """
        ).single().decode(Int64.self, at: 0)
        guard let endpoint = try await endpoint(id) else {
            throw WebhookError(.noSuchEndpoint, "endpoint \(id) vanished after it was added")
        }
        return endpoint
    }

    /// Every endpoint, oldest first.
    public func endpoints() async throws -> [WebhookEndpoint] {
        try await client.query(
            """
            SELECT \(unsafeSQL: Self.endpointColumns) FROM webhook_endpoints w ORDER BY w.endpoint_id
            """
        ).map(Self.endpoint(from:))
    }

    public func endpoint(_ id: Int64) async throws -> WebhookEndpoint? {
        try await client.query(
            """
            SELECT \(unsafeSQL: Self.endpointColumns) FROM webhook_endpoints w WHERE w.endpoint_id = \(id)
            """
        ).first.map(Self.endpoint(from:))
    }

    /// Disables an endpoint: nothing more is queued for it or sent to it. Its queued events stay
    /// queued (listed as pending), and would go out if it were enabled again.
    /// - Throws: ``WebhookError`` `.noSuchEndpoint`, `.alreadyDisabled`.
    public func disableEndpoint(_ id: Int64, actor: String) async throws -> WebhookEndpoint {
        try Self.checkActor(actor)
        let changed = try await client.execute(
            """
            UPDATE webhook_endpoints SET enabled = false, disabled_by = \(actor)::text, disabled_at = now()
            WHERE endpoint_id = \(id) AND enabled
            """)
        guard let endpoint = try await endpoint(id) else {
            throw WebhookError(.noSuchEndpoint, "no webhook endpoint has id \(id)")
        }
        guard changed == 1 else { throw WebhookError(.alreadyDisabled, "webhook endpoint \(id) is disabled already") }
        return endpoint
    }

    // MARK: Events and replays

    /// One event from the outbox.
    public func event(_ eventId: Int64) async throws -> WebhookEvent? {
        try await client.query(
            """
            SELECT o.event_id, o.type, o.uid, o.created_at, \(unsafeSQL: Self.data) FROM webhook_outbox o
            WHERE o.event_id = \(eventId)
            """
        ).first.map(Self.event(from:))
    }

    /// The outbox's events from `after` (exclusive), oldest first, at most `limit`.
    public func events(after eventId: Int64 = 0, limit: Int = 100) async throws -> [WebhookEvent] {
        try await client.query(
            """
            SELECT o.event_id, o.type, o.uid, o.created_at, \(unsafeSQL: Self.data) FROM webhook_outbox o
            WHERE o.event_id > \(eventId) ORDER BY o.event_id LIMIT \(max(1, min(limit, 10_000)))
            """
        ).map(Self.event(from:))
    }

    /// What a replay is of: one event, or the events created in `[from, to)` (optionally of some types).
    public enum ReplaySelection: Sendable {
        case event(Int64)
        case range(from: Date, to: Date, types: [WebhookEventType]?)
    }

    /// Queues the selected events again, under their own ids, for `endpointId` or (nil) every enabled
    /// endpoint subscribed to each event's type. An event still queued for an endpoint is not queued twice.
    /// - Returns: how many (endpoint, event) deliveries were queued.
    /// - Throws: ``WebhookError`` `.noSuchEvent`, `.noSuchEndpoint` (or disabled), `.invalidInput`.
    public func replay(_ selection: ReplaySelection, endpointId: Int64?) async throws -> Int {
        if let endpointId {
            guard let endpoint = try await endpoint(endpointId), endpoint.enabled else {
                throw WebhookError(.noSuchEndpoint, "no enabled webhook endpoint has id \(endpointId)")
            }
        }
        var eventId: Int64?
        var from: Date?
        var to: Date?
        var types: [String]?
        switch selection {
        case .event(let id):
            guard try await event(id) != nil else {
                throw WebhookError(.noSuchEvent, "no webhook event has id \(WebhookEvent.publicId(id))")
            }
            eventId = id
        case .range(let start, let end, let chosenTypes):
            guard start < end else { throw WebhookError(.invalidInput, "the range's start must be before its end") }
            (from, to, types) = (start, end, chosenTypes?.map(\.rawValue))
            let count = try await client.query(
                """
                SELECT count(*) FROM webhook_outbox
                WHERE created_at >= \(start)::timestamptz AND created_at < \(end)::timestamptz
                  AND (\(types)::text[] IS NULL OR type = ANY (\(types)::text[]))
                """
            ).single().decode(Int.self, at: 0)
            guard count <= Self.replayLimit else {
                throw WebhookError(
                    .invalidInput, "the range holds \(count) events; replay at most \(Self.replayLimit) at once")
            }
        }
        // As the ledger's triggers queue events: behind each queue's head (KEY SHARE locked, so a worker
        // delivering that head at the same moment promotes what this queues), then the queues whose first
        // event is now a replayed one get it due.
        let targets: PostgresQuery = """
            webhook_replay_targets(
                \(eventId)::bigint, \(from)::timestamptz, \(to)::timestamptz, \(types)::text[], \(endpointId)::bigint)
            """
        // Each (endpoint, user) queue the replay adds to.
        let queues: PostgresQuery = "(SELECT DISTINCT t.endpoint_id, t.uid FROM \(targets) t) AS queue"
        return try await client.withTransaction { connection in
            try await connection.execute(
                """
                SELECT head.event_id
                FROM \(queues)
                CROSS JOIN LATERAL (
                    SELECT q.event_id FROM webhook_pending q
                    WHERE q.endpoint_id = queue.endpoint_id AND q.uid = queue.uid
                    ORDER BY q.event_id LIMIT 1
                    FOR KEY SHARE
                ) AS head
                """)
            let queued = try await connection.execute(
                """
                INSERT INTO webhook_pending (endpoint_id, event_id, uid, due_at)
                SELECT t.endpoint_id, t.event_id, t.uid, 'infinity'
                FROM \(targets) t
                ORDER BY t.event_id
                ON CONFLICT (endpoint_id, event_id) DO NOTHING
                """)
            try await connection.execute(
                """
                UPDATE webhook_pending p SET due_at = now()
                FROM \(queues)
                CROSS JOIN LATERAL (
                    SELECT q.event_id, q.due_at FROM webhook_pending q
                    WHERE q.endpoint_id = queue.endpoint_id AND q.uid = queue.uid
                    ORDER BY q.event_id LIMIT 1
                ) AS head
                WHERE p.endpoint_id = queue.endpoint_id AND p.event_id = head.event_id AND head.due_at = 'infinity'
                """)
            return queued
        }
    }

    /// Makes due every queue head left waiting at 'infinity' (each (endpoint, user) queue's first event
    /// must be due). The triggers, replays and deliveries keep that so; this is the worker's periodic
    /// check that nothing waits for ever whatever happened to the queue (an operator's DELETE, say).
    /// - Returns: how many heads it made due.
    @discardableResult
    public func promoteWaitingHeads() async throws -> Int {
        try await client.execute(
            """
            UPDATE webhook_pending p SET due_at = now()
            FROM (
                SELECT DISTINCT ON (endpoint_id, uid) endpoint_id, event_id, due_at FROM webhook_pending
                ORDER BY endpoint_id, uid, event_id
            ) AS head
            WHERE p.endpoint_id = head.endpoint_id AND p.event_id = head.event_id AND head.due_at = 'infinity'
            """)
    }

    /// Every attempt at `eventId`, oldest first.
    public func attempts(of eventId: Int64) async throws -> [WebhookAttempt] {
        try await client.query(
            """
            SELECT endpoint_id, event_id, attempt, started_at, duration_ms, status_code, error, outcome
            FROM webhook_attempts WHERE event_id = \(eventId) ORDER BY attempt_id
            """
        ).map { row in
            let (endpointId, eventId, attempt, startedAt, duration, status, error, outcome) = try row.decode(
                (Int64, Int64, Int, Date, Int, Int?, String?, String).self)
            return WebhookAttempt(
                endpointId: endpointId, eventId: eventId, attempt: attempt, startedAt: startedAt,
                durationMilliseconds: duration, statusCode: status, error: error, outcome: outcome)
        }
    }

    // MARK: Rows

    /// An outbox row `o`'s `data`, rendered from the ledger rows it names (migration 0016). Never null
    /// while those rows exist, and they are append-only; `{}` rather than a claim that fails for good.
    static let data = "coalesce(webhook_event_data(o), '{}'::jsonb)::text"

    private static let endpointColumns = """
        w.endpoint_id, w.url, w.events, w.description, w.enabled, w.created_by, w.created_at, w.disabled_by,
        w.disabled_at, w.consecutive_failures, w.failing_since, w.last_delivered_at,
        (SELECT count(*) FROM webhook_pending p WHERE p.endpoint_id = w.endpoint_id)
        """

    private static func endpoint(from row: PostgresRow) throws -> WebhookEndpoint {
        let (id, url, events, description, enabled, createdBy, createdAt, disabledBy, disabledAt) = try row.decode(
            (Int64, String, [String]?, String, Bool, String, Date, String?, Date?).self)
        return WebhookEndpoint(
            endpointId: id, url: url, events: events.map { $0.compactMap(WebhookEventType.init(rawValue:)) },
            description: description, enabled: enabled, createdBy: createdBy, createdAt: createdAt,
            disabledBy: disabledBy, disabledAt: disabledAt, consecutiveFailures: try row.decode(Int.self, at: 9),
            failingSince: try row.decode(Date?.self, at: 10), lastDeliveredAt: try row.decode(Date?.self, at: 11),
            pending: try row.decode(Int.self, at: 12))
    }

    private static func event(from row: PostgresRow) throws -> WebhookEvent {
        let (eventId, type, uid, createdAt, data) = try row.decode((Int64, String, String, Date, String).self)
        guard let type = WebhookEventType(rawValue: type) else {
            throw PostgresError(code: .decoding, message: "webhook event \(eventId) has type \(type)")
        }
        return WebhookEvent(eventId: eventId, type: type, uid: uid, createdAt: createdAt, dataJSON: data)
    }

    // MARK: Checks

    static func checkSecret(_ secret: String) throws(WebhookError) {
        guard (24...256).contains(secret.utf8.count),
            secret.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F })
        else {
            throw WebhookError(
                .invalidInput, "the signing secret must be 24 to 256 printable ASCII characters without spaces")
        }
    }

    static func checkActor(_ actor: String) throws(WebhookError) {
        guard (1...64).contains(actor.count), !actor.unicodeScalars.contains(where: isControl) else {
            throw WebhookError(.invalidInput, "the actor must be 1 to 64 characters without control characters")
        }
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .control
    }
}
