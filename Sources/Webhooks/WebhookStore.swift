import Foundation
import Postgres

/// An endpoint as operators see it (never its secret).
public struct WebhookEndpoint: Sendable, Hashable {
    public let endpointId: Int64
    public let url: String
    /// nil: every event type.
    public let events: [WebhookEventType]?
    public let description: String
    public let enabled: Bool
    public let createdBy: String
    public let createdAt: Date
    public let disabledBy: String?
    public let disabledAt: Date?
    public let consecutiveFailures: Int
    /// Set after ``WebhookStore/failingThreshold`` failed attempts in a row; cleared by a delivery.
    public let failingSince: Date?
    public let lastDeliveredAt: Date?
    /// Events queued for it and not delivered yet.
    public let pending: Int
}

/// An event as the outbox holds it.
public struct WebhookEvent: Sendable, Hashable {
    public let eventId: Int64
    public let type: WebhookEventType
    public let uid: String
    public let createdAt: Date
    /// The `data` object, as PostgreSQL's jsonb text, rendered from rows that never change: the same
    /// bytes on every attempt.
    public let dataJSON: String

    /// The body posted: `{"id", "type", "created", "data"}`. `id` is `evt_<event id>`, `created` unix seconds.
    public var body: String {
        let created = Int64(createdAt.timeIntervalSince1970.rounded(.down))
        return
            #"{"id":"\#(Self.publicId(eventId))","type":"\#(type.rawValue)","created":\#(created),"data":\#(dataJSON)}"#
    }

    /// The id receivers see: `evt_` and the outbox's number.
    public static func publicId(_ eventId: Int64) -> String { "evt_\(eventId)" }

    /// The outbox number of `evt_123` or `123`.
    public static func eventId(parsing text: String) -> Int64? {
        let digits = text.hasPrefix("evt_") ? String(text.dropFirst(4)) : text
        guard (1...19).contains(digits.count), digits.allSatisfy(\.isASCII), let id = Int64(digits), id > 0 else {
            return nil
        }
        return id
    }
}

/// One delivery a worker claimed: post `event` to `url`, signed with `secret`.
public struct WebhookDelivery: Sendable {
    public let endpointId: Int64
    public let url: String
    public let secret: String
    public let event: WebhookEvent
    /// This attempt's number (1 for the first).
    public let attempt: Int
    public let queuedAt: Date
    /// The claim the outcome is recorded under.
    public let claim: UUID
}

/// What happened to one attempt.
public struct WebhookAttemptResult: Sendable {
    public enum Outcome: String, Sendable { case delivered, failed }
    public let outcome: Outcome
    public let statusCode: Int?
    public let error: String?
    public let startedAt: Date
    public let duration: Duration

    public init(outcome: Outcome, statusCode: Int?, error: String?, startedAt: Date, duration: Duration) {
        self.outcome = outcome
        self.statusCode = statusCode
        self.error = error
        self.startedAt = startedAt
        self.duration = duration
    }
}

/// An attempt as `webhook_attempts` keeps it.
public struct WebhookAttempt: Sendable, Hashable {
    public let endpointId: Int64
    public let eventId: Int64
    public let attempt: Int
    public let startedAt: Date
    public let durationMilliseconds: Int
    public let statusCode: Int?
    public let error: String?
    public let outcome: String
}

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
        return try await client.execute(
            """
            WITH chosen AS (
                SELECT event_id, type, uid FROM webhook_outbox
                WHERE event_id = \(eventId)::bigint
                   OR (\(eventId)::bigint IS NULL AND created_at >= \(from)::timestamptz
                       AND created_at < \(to)::timestamptz
                       AND (\(types)::text[] IS NULL OR type = ANY (\(types)::text[])))
            )
            INSERT INTO webhook_pending (endpoint_id, event_id, uid)
            SELECT w.endpoint_id, c.event_id, c.uid
            FROM chosen c JOIN webhook_endpoints w
              ON w.enabled AND (\(endpointId)::bigint IS NULL AND (w.events IS NULL OR c.type = ANY (w.events))
                                OR w.endpoint_id = \(endpointId)::bigint)
            ORDER BY c.event_id
            ON CONFLICT (endpoint_id, event_id) DO NOTHING
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

    // MARK: The delivery queue

    /// Claims up to `limit` deliveries that are due, for enabled endpoints, each the oldest queued event
    /// of its user for its endpoint (so one user's events go out in order). Rows another worker holds
    /// are skipped (`SKIP LOCKED`); a claimed row is not due again until `lease` has passed, so a worker
    /// that dies mid-delivery delays its deliveries by the lease, and never loses them.
    public func claim(limit: Int, lease: Duration) async throws -> [WebhookDelivery] {
        let claim = UUID()
        let leaseMilliseconds = Int64(lease.seconds * 1000)
        return try await client.query(
            """
            WITH due AS (
                SELECT p.endpoint_id, p.event_id
                FROM webhook_pending p
                JOIN webhook_endpoints w ON w.endpoint_id = p.endpoint_id AND w.enabled
                WHERE p.due_at <= now()
                  AND NOT EXISTS (
                      SELECT 1 FROM webhook_pending q
                      WHERE q.endpoint_id = p.endpoint_id AND q.uid = p.uid AND q.event_id < p.event_id)
                ORDER BY p.due_at, p.event_id
                LIMIT \(max(1, min(limit, 1000)))
                FOR UPDATE OF p SKIP LOCKED
            ),
            claimed AS (
                UPDATE webhook_pending p
                SET due_at = now() + \(leaseMilliseconds) * interval '1 millisecond', attempts = p.attempts + 1,
                    claim = \(claim)::uuid
                FROM due WHERE p.endpoint_id = due.endpoint_id AND p.event_id = due.event_id
                RETURNING p.endpoint_id, p.event_id, p.attempts, p.queued_at
            )
            SELECT c.endpoint_id, w.url, w.secret, o.event_id, o.type, o.uid, o.created_at, \(unsafeSQL: Self.data), c.attempts,
                   c.queued_at
            FROM claimed c
            JOIN webhook_endpoints w ON w.endpoint_id = c.endpoint_id
            JOIN webhook_outbox o ON o.event_id = c.event_id
            ORDER BY o.event_id
            """
        ).map { row in
            let (endpointId, url, secret, eventId, type, uid, createdAt, data, attempt, queuedAt) = try row.decode(
                (Int64, String, String, Int64, String, String, Date, String, Int, Date).self)
            guard let type = WebhookEventType(rawValue: type) else {
                throw PostgresError(code: .decoding, message: "webhook event \(eventId) has type \(type)")
            }
            return WebhookDelivery(
                endpointId: endpointId, url: url, secret: secret,
                event: WebhookEvent(eventId: eventId, type: type, uid: uid, createdAt: createdAt, dataJSON: data),
                attempt: attempt, queuedAt: queuedAt, claim: claim)
        }
    }

    /// What recording an attempt decided.
    public enum Recorded: Sendable, Equatable {
        case delivered
        /// Tried again at the time given.
        case retrying(at: Date)
        /// Past the give-up window: no more attempts.
        case gaveUp
        /// Another worker's claim replaced this one (this one's lease ran out); only the attempt was kept.
        case superseded
    }

    /// Records an attempt: a delivery takes the event off the endpoint's queue; a failure schedules the
    /// next attempt after `retryAfter`, or gives up when the next attempt would fall past the give-up
    /// window from when the event was queued. Counts the endpoint's failures in a row and marks it
    /// failing at ``failingThreshold``.
    public func record(
        _ result: WebhookAttemptResult, of delivery: WebhookDelivery, retryAfter: Duration, giveUpAfter: Duration
    ) async throws -> Recorded {
        let error = result.error.map { String($0.unicodeScalars.filter { !Self.isControl($0) }.prefix(500)) }
        let durationMs = Int(min(max(result.duration.seconds * 1000, 0), 86_400_000).rounded())
        let delivered = result.outcome == .delivered
        let retryMs = Int64(retryAfter.seconds * 1000)
        let giveUpMs = Int64(giveUpAfter.seconds * 1000)
        let row = try await client.query(
            """
            WITH target AS (
                SELECT endpoint_id, event_id, claim = \(delivery.claim)::uuid AS mine,
                       now() + \(retryMs) * interval '1 millisecond'
                           > queued_at + \(giveUpMs) * interval '1 millisecond' AS past_window
                FROM webhook_pending
                WHERE endpoint_id = \(delivery.endpointId) AND event_id = \(delivery.event.eventId)
                FOR UPDATE
            ),
            gone AS (
                DELETE FROM webhook_pending p USING target t
                WHERE p.endpoint_id = t.endpoint_id AND p.event_id = t.event_id
                  AND (\(delivered) OR (t.mine AND t.past_window))
                RETURNING p.event_id
            ),
            retry AS (
                UPDATE webhook_pending p SET due_at = now() + \(retryMs) * interval '1 millisecond', claim = NULL
                FROM target t
                WHERE p.endpoint_id = t.endpoint_id AND p.event_id = t.event_id
                  AND NOT \(delivered) AND t.mine AND NOT t.past_window
                RETURNING p.due_at
            ),
            attempt AS (
                INSERT INTO webhook_attempts (endpoint_id, event_id, attempt, started_at, duration_ms, status_code,
                    error, outcome)
                VALUES (\(delivery.endpointId), \(delivery.event.eventId), \(delivery.attempt),
                    \(result.startedAt)::timestamptz, \(durationMs), \(result.statusCode)::integer, \(error)::text,
                    CASE WHEN \(delivered) THEN 'delivered'
                         WHEN EXISTS (SELECT 1 FROM gone) THEN 'gave_up' ELSE 'failed' END)
            ),
            endpoint AS (
                UPDATE webhook_endpoints
                SET consecutive_failures = CASE WHEN \(delivered) THEN 0 ELSE consecutive_failures + 1 END,
                    failing_since = CASE WHEN \(delivered) THEN NULL
                                         WHEN consecutive_failures + 1 >= \(Self.failingThreshold)
                                         THEN coalesce(failing_since, now()) ELSE failing_since END,
                    last_delivered_at = CASE WHEN \(delivered) THEN now() ELSE last_delivered_at END
                WHERE endpoint_id = \(delivery.endpointId)
            )
            SELECT EXISTS (SELECT 1 FROM gone), (SELECT due_at FROM retry)
            """
        ).single()
        let (removed, retryAt) = try row.decode((Bool, Date?).self)
        if delivered { return .delivered }
        if removed { return .gaveUp }
        if let retryAt { return .retrying(at: retryAt) }
        return .superseded
    }

    // MARK: Rows

    /// An outbox row `o`'s `data`, rendered from the ledger rows it names (migration 0016). Never null
    /// while those rows exist, and they are append-only; `{}` rather than a claim that fails for good.
    private static let data = "coalesce(webhook_event_data(o), '{}'::jsonb)::text"

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
