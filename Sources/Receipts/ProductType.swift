/// An in-app product type, spelled as in Apple's `type` field.
public struct ProductType: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let consumable = ProductType(rawValue: "Consumable")
    /// What the shop sells: sprout faces and backgrounds, bought once and kept.
    public static let nonConsumable = ProductType(rawValue: "Non-Consumable")
    public static let autoRenewableSubscription = ProductType(rawValue: "Auto-Renewable Subscription")
    public static let nonRenewingSubscription = ProductType(rawValue: "Non-Renewing Subscription")
}
