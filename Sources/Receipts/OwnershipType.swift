/// Whether the customer bought the item or has it through Family Sharing (Apple's `inAppOwnershipType`).
///
/// Family-shared items are granted but carry no revenue.
public struct OwnershipType: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let purchased = OwnershipType(rawValue: "PURCHASED")
    public static let familyShared = OwnershipType(rawValue: "FAMILY_SHARED")
}
