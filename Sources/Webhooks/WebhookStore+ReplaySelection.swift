import Foundation

extension WebhookStore.ReplaySelection {
    /// How a caller spells the fields of a replay, for the messages of its refusals: the admin API's
    /// JSON keys or the command line's options.
    public struct FieldNames: Sendable {
        public let event: String
        public let from: String
        public let to: String
        public let types: String

        public init(event: String, from: String, to: String, types: String) {
            (self.event, self.from, self.to, self.types) = (event, from, to, types)
        }

        /// `POST /api/v1/admin/webhooks/replay`'s body.
        public static let api = FieldNames(event: "eventId", from: "from", to: "to", types: "types")
    }

    /// The one reading of a replay request, the admin API's and `shopledger webhooks replay`'s: one event
    /// (`evt_123`), or the events created from `from` (inclusive) to `to` (exclusive), ISO 8601 instants,
    /// optionally of `types` only. Types go with a range only; every other combination is refused.
    /// - Throws: ``WebhookError`` `.invalidInput`, its message naming the fields as `names` spells them.
    public init(
        event: String?, from: String?, to: String?, types: [WebhookEventType]?, names: FieldNames = .api
    ) throws(WebhookError) {
        switch (event, from, to) {
        case (let id?, nil, nil):
            guard types == nil else {
                throw WebhookError(
                    .invalidInput, "\(names.types) goes with \(names.from) and \(names.to), not \(names.event)")
            }
            guard let eventId = WebhookEvent.eventId(parsing: id) else {
                throw WebhookError(.invalidInput, "\(names.event) must be evt_<number>, got \(id.prefix(40))")
            }
            self = .event(eventId)
        case (nil, let from?, let to?):
            self = .range(
                from: try Self.instant(from, names.from), to: try Self.instant(to, names.to), types: types)
        default:
            throw WebhookError(
                .invalidInput, "give \(names.event), or \(names.from) and \(names.to) (ISO 8601 instants)")
        }
    }

    /// An ISO 8601 instant with or without fractional seconds, as the API writes them
    /// (`2026-11-27T00:00:00Z`, `2026-11-27T00:00:00.000Z`, or with an offset).
    public static func instant(_ text: String, _ name: String) throws(WebhookError) -> Date {
        guard text.count <= 40,
            let date = (try? Date.ISO8601FormatStyle().parse(text))
                ?? (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text))
        else {
            throw WebhookError(.invalidInput, "\(name) must be an ISO 8601 instant such as 2026-11-27T00:00:00Z")
        }
        return date
    }
}
