import Foundation

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
    /// A ``WebhookFailure``'s raw value: what `webhook_attempts` keeps and operators see.
    public let error: String?
    public let startedAt: Date
    public let duration: Duration
    /// What exactly happened (the socket's or TLS library's error, the address refused), for the
    /// server's log only: never stored, never shown by the admin API.
    public let detail: String?

    public init(
        outcome: Outcome, statusCode: Int?, error: String?, startedAt: Date, duration: Duration, detail: String? = nil
    ) {
        self.outcome = outcome
        self.statusCode = statusCode
        self.error = error
        self.startedAt = startedAt
        self.duration = duration
        self.detail = detail
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
