import Foundation

/// The ledger events other systems can subscribe to. The raw values are the contract: they name the
/// events in every payload (`"type"`), in `--events` and in the admin API.
public enum WebhookEventType: String, Sendable, Hashable, CaseIterable, Codable {
    /// A verified purchase was recorded (bought or family-shared; priced or not yet).
    case purchaseRecorded = "purchase.recorded"
    /// A refund took a purchase's item and money back.
    case refundApplied = "refund.applied"
    /// A refund was reversed: the purchase is live again.
    case refundReversed = "refund.reversed"
    /// Family sharing of a purchase was revoked.
    case purchaseRevoked = "purchase.revoked"
    /// Apple's signed price arrived for a purchase recorded without one.
    case priceLearned = "price.learned"
    /// Support granted an item as compensation.
    case supportGranted = "support.granted"
    /// Support took a compensation grant back.
    case supportRevoked = "support.revoked"

    /// `a,b,c` (spaces allowed) as event types, duplicates dropped; refused naming the first unknown one.
    public static func parseList(_ text: String) throws(WebhookError) -> [WebhookEventType] {
        let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !names.isEmpty, names.count <= 32 else {
            throw WebhookError(.invalidInput, "events must name at least one event type")
        }
        return try Self.parse(names)
    }

    /// Each name as an event type, duplicates dropped, in the order given.
    public static func parse(_ names: [String]) throws(WebhookError) -> [WebhookEventType] {
        guard !names.isEmpty, names.count <= 32 else {
            throw WebhookError(.invalidInput, "events must name at least one event type (or be left out for every one)")
        }
        var types: [WebhookEventType] = []
        for name in names {
            guard let type = WebhookEventType(rawValue: name) else {
                throw WebhookError(
                    .invalidInput,
                    "unknown event type \(name.prefix(60).debugDescription); the types are "
                        + allCases.map(\.rawValue).joined(separator: ", "))
            }
            if !types.contains(type) { types.append(type) }
        }
        return types
    }
}
