import APIViews
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

    struct Replayed: ResponseEncodable, Sendable {
        let queued: Int
    }

    func register(on group: RouterGroup<ShopRequestContext>) {
        group.get("admin/webhooks") { _, _ in
            ViewResponse(WebhookEndpointsView(try await store.endpoints()))
        }
        group.post("admin/webhooks") { request, context -> EditedResponse<ViewResponse<AddedWebhookEndpointView>> in
            let actor = try context.requireAdminActor()
            let input = try await body.json(AddRequest.self, of: request)
            let url = try WebhookURL(input.url, destinations: destinations)
            let events = try input.events.map { names throws(WebhookError) in try WebhookEventType.parse(names) }
            let made = input.secret == nil ? Self.newSecret() : nil
            let endpoint = try await store.addEndpoint(
                url: url, events: events, secret: input.secret ?? made ?? "", description: input.description ?? "",
                actor: actor)
            return EditedResponse(
                status: .created, response: ViewResponse(AddedWebhookEndpointView(endpoint, madeSecret: made)))
        }
        group.post("admin/webhooks/:endpointId/disable") { _, context in
            let actor = try context.requireAdminActor()
            let id = try Self.positive(try context.parameters.require("endpointId"), "the endpoint id")
            return ViewResponse(WebhookEndpointView(try await store.disableEndpoint(id, actor: actor)))
        }
        group.post("admin/webhooks/replay") { request, _ -> Replayed in
            let input = try await body.json(ReplayRequest.self, of: request)
            let selection = try WebhookStore.ReplaySelection(
                event: input.eventId, from: input.from, to: input.to,
                types: try input.types.map { names throws(WebhookError) in try WebhookEventType.parse(names) })
            return Replayed(queued: try await store.replay(selection, endpointId: input.endpointId))
        }
        group.get("admin/webhooks/events/:eventId") { _, context in
            let text = try context.parameters.require("eventId")
            guard let id = WebhookEvent.eventId(parsing: text) else {
                throw WebhookError(.invalidInput, "the event id must be evt_<number>, got \(text.prefix(40))")
            }
            guard let event = try await store.event(id) else {
                throw WebhookError(.noSuchEvent, "no webhook event has id \(WebhookEvent.publicId(id))")
            }
            return ViewResponse(WebhookEventView(event, attempts: try await store.attempts(of: id)))
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
