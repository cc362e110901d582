import Foundation
import Webhooks

/// A webhook endpoint as `/api/v1/admin/webhooks` answers it and `shopledger webhooks … --json` prints
/// it: its state and how many events wait for it, never its secret.
public struct WebhookEndpointView: Encodable, Sendable, Equatable {
    public let endpointId: Int64
    public let url: String
    /// null for every event type.
    @NullWhenNil public var events: [String]?
    public let description: String
    public let enabled: Bool
    public let createdBy: String
    public let createdAt: String
    @NullWhenNil public var disabledBy: String?
    @NullWhenNil public var disabledAt: String?
    public let consecutiveFailures: Int
    @NullWhenNil public var failingSince: String?
    @NullWhenNil public var lastDeliveredAt: String?
    public let pending: Int

    public init(_ endpoint: WebhookEndpoint) {
        endpointId = endpoint.endpointId
        url = endpoint.url
        events = endpoint.events?.map(\.rawValue)
        description = endpoint.description
        enabled = endpoint.enabled
        createdBy = endpoint.createdBy
        createdAt = ViewJSON.timestamp(endpoint.createdAt)
        disabledBy = endpoint.disabledBy
        disabledAt = endpoint.disabledAt.map(ViewJSON.timestamp)
        consecutiveFailures = endpoint.consecutiveFailures
        failingSince = endpoint.failingSince.map(ViewJSON.timestamp)
        lastDeliveredAt = endpoint.lastDeliveredAt.map(ViewJSON.timestamp)
        pending = endpoint.pending
    }
}

/// `GET /api/v1/admin/webhooks` and `shopledger webhooks list --json`: every endpoint, oldest first.
public struct WebhookEndpointsView: Encodable, Sendable, Equatable {
    public let endpoints: [WebhookEndpointView]

    public init(_ endpoints: [WebhookEndpoint]) {
        self.endpoints = endpoints.map(WebhookEndpointView.init)
    }
}

/// `POST /api/v1/admin/webhooks` and `shopledger webhooks add --json`: the endpoint added, and `secret`:
/// the signing secret when the server made it (shown in this answer only), null when the caller gave it.
public struct AddedWebhookEndpointView: Encodable, Sendable, Equatable {
    public let endpoint: WebhookEndpointView
    @NullWhenNil public var secret: String?

    public init(_ endpoint: WebhookEndpoint, madeSecret: String?) {
        self.endpoint = WebhookEndpointView(endpoint)
        secret = madeSecret
    }

    enum CodingKeys: String, CodingKey { case secret }

    /// The endpoint's keys and `secret`, in one object.
    public func encode(to encoder: any Encoder) throws {
        try endpoint.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(_secret, forKey: .secret)
    }
}

/// `GET /api/v1/admin/webhooks/events/{eventId}`: an event and every attempt at delivering it.
public struct WebhookEventView: Encodable, Sendable, Equatable {
    public struct Attempt: Encodable, Sendable, Equatable {
        public let endpointId: Int64
        public let attempt: Int
        public let startedAt: String
        public let durationMs: Int
        /// null when no answer came.
        @NullWhenNil public var statusCode: Int?
        /// The failure's class (`timeout`, `dns_failed`, …); null for a delivery.
        @NullWhenNil public var error: String?
        public let outcome: String

        public init(_ attempt: WebhookAttempt) {
            endpointId = attempt.endpointId
            self.attempt = attempt.attempt
            startedAt = ViewJSON.timestamp(attempt.startedAt)
            durationMs = attempt.durationMilliseconds
            statusCode = attempt.statusCode
            error = attempt.error
            outcome = attempt.outcome
        }
    }

    public let id: String
    public let type: String
    public let uid: String
    public let created: String
    public let attempts: [Attempt]

    public init(_ event: WebhookEvent, attempts: [WebhookAttempt]) {
        id = WebhookEvent.publicId(event.eventId)
        type = event.type.rawValue
        uid = event.uid
        created = ViewJSON.timestamp(event.createdAt)
        self.attempts = attempts.map(Attempt.init)
    }
}
