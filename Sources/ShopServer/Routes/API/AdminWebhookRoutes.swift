import Crypto
import Foundation
import Hummingbird
import Webhooks

/// Webhook endpoints under `/api/v1/admin`, for the admin token only (registered on the admin group):
///
/// - `GET /api/v1/admin/webhooks`: every endpoint, its state and how many events wait for it (never a secret);
/// - `POST /api/v1/admin/webhooks`: add one (`url`, optional `events`, optional `secret`: when left out one
///   is made and returned in this answer only);
/// - `POST /api/v1/admin/webhooks/{endpointId}/disable`: stop sending to it;
/// - `POST /api/v1/admin/webhooks/replay`: queue one event (`eventId`) or a time range (`from`, `to`,
///   optional `types`) again, for one endpoint (`endpointId`) or every subscribed one;
/// - `GET /api/v1/admin/webhooks/events/{eventId}`: an event and every attempt at delivering it.
///
/// The admin token's label is recorded as who added or disabled an endpoint.
struct AdminWebhookRoutes {
    let store: WebhookStore
    let body: RequestBody
    /// Where endpoints may point (checked again at each delivery).
    let destinations: WebhookDestinations

    struct AddRequest: Decodable, Sendable {
        let url: String
        let events: [String]?
        let secret: String?
        let description: String?
    }

    struct ReplayRequest: Decodable, Sendable {
        let eventId: String?
        let from: String?
        let to: String?
        let types: [String]?
        let endpointId: Int64?
    }

    struct Endpoint: ResponseEncodable, Sendable {
        let endpointId: Int64
        let url: String
        let events: [String]?
        let description: String
        let enabled: Bool
        let createdBy: String
        let createdAt: String
        let disabledBy: String?
        let disabledAt: String?
        let consecutiveFailures: Int
        let failingSince: String?
        let lastDeliveredAt: String?
        let pending: Int
        /// Only in the answer that added the endpoint with a secret the server made.
        let secret: String?

        init(_ endpoint: WebhookEndpoint, secret: String? = nil) {
            endpointId = endpoint.endpointId
            url = endpoint.url
            events = endpoint.events?.map(\.rawValue)
            description = endpoint.description
            enabled = endpoint.enabled
            createdBy = endpoint.createdBy
            createdAt = UserDocument.timestamp(endpoint.createdAt)
            disabledBy = endpoint.disabledBy
            disabledAt = endpoint.disabledAt.map(UserDocument.timestamp)
            consecutiveFailures = endpoint.consecutiveFailures
            failingSince = endpoint.failingSince.map(UserDocument.timestamp)
            lastDeliveredAt = endpoint.lastDeliveredAt.map(UserDocument.timestamp)
            pending = endpoint.pending
            self.secret = secret
        }
    }

    struct Endpoints: ResponseEncodable, Sendable {
        let endpoints: [Endpoint]
    }

    struct Replayed: ResponseEncodable, Sendable {
        let queued: Int
    }

    struct Attempt: Encodable, Sendable {
        let endpointId: Int64
        let attempt: Int
        let startedAt: String
        let durationMs: Int
        let statusCode: Int?
        let error: String?
        let outcome: String
    }

    struct Event: ResponseEncodable, Sendable {
        let id: String
        let type: String
        let uid: String
        let created: String
        let attempts: [Attempt]
    }

    func register(on group: RouterGroup<ShopRequestContext>) {
        group.get("admin/webhooks") { _, _ -> Endpoints in
            Endpoints(endpoints: try await store.endpoints().map { Endpoint($0) })
        }
        group.post("admin/webhooks") { request, context -> EditedResponse<Endpoint> in
            let actor = try context.requireAdminActor()
            let input = try await body.json(AddRequest.self, of: request)
            let url = try WebhookURL(input.url, destinations: destinations)
            let events = try input.events.map { names throws(WebhookError) in try WebhookEventType.parse(names) }
            let made = input.secret == nil ? Self.newSecret() : nil
            let endpoint = try await store.addEndpoint(
                url: url, events: events, secret: input.secret ?? made ?? "", description: input.description ?? "",
                actor: actor)
            return EditedResponse(status: .created, response: Endpoint(endpoint, secret: made))
        }
        group.post("admin/webhooks/:endpointId/disable") { _, context -> Endpoint in
            let actor = try context.requireAdminActor()
            let id = try Self.positive(try context.parameters.require("endpointId"), "the endpoint id")
            return Endpoint(try await store.disableEndpoint(id, actor: actor))
        }
        group.post("admin/webhooks/replay") { request, _ -> Replayed in
            let input = try await body.json(ReplayRequest.self, of: request)
            let selection = try WebhookStore.ReplaySelection(
                event: input.eventId, from: input.from, to: input.to,
                types: try input.types.map { names throws(WebhookError) in try WebhookEventType.parse(names) })
            return Replayed(queued: try await store.replay(selection, endpointId: input.endpointId))
        }
        group.get("admin/webhooks/events/:eventId") { _, context -> Event in
            let text = try context.parameters.require("eventId")
            guard let id = WebhookEvent.eventId(parsing: text) else {
                throw WebhookError(.invalidInput, "the event id must be evt_<number>, got \(text.prefix(40))")
            }
            guard let event = try await store.event(id) else {
                throw WebhookError(.noSuchEvent, "no webhook event has id \(WebhookEvent.publicId(id))")
            }
            let attempts = try await store.attempts(of: id).map {
                Attempt(
                    endpointId: $0.endpointId, attempt: $0.attempt, startedAt: UserDocument.timestamp($0.startedAt),
                    durationMs: $0.durationMilliseconds, statusCode: $0.statusCode, error: $0.error,
                    outcome: $0.outcome)
            }
            return Event(
                id: WebhookEvent.publicId(id), type: event.type.rawValue, uid: event.uid,
                created: UserDocument.timestamp(event.createdAt), attempts: attempts)
        }
    }

    /// 32 random bytes as `whsec_` and hex.
    static func newSecret() -> String {
        "whsec_" + SymmetricKey(size: .bits256).withUnsafeBytes { $0.map { String(format: "%02x", $0) }.joined() }
    }

    private static func positive(_ text: String, _ what: String) throws(WebhookError) -> Int64 {
        guard text.count <= 19, let value = Int64(text), value > 0 else {
            throw WebhookError(.invalidInput, "\(what) must be a positive integer, got \(text.prefix(40))")
        }
        return value
    }
}
