import Foundation

/// A registered user of the shop.
public struct User: Sendable, Hashable {
    /// The Firebase uid.
    public var uid: String
    public var profile: UserProfile
    public var equipped: EquippedItems
    public var registeredAt: Date

    public init(uid: String, profile: UserProfile, equipped: EquippedItems, registeredAt: Date) {
        self.uid = uid
        self.profile = profile
        self.equipped = equipped
        self.registeredAt = registeredAt
    }
}

/// The result of `LedgerStore.register(uid:profile:)`, which is idempotent.
public enum RegistrationOutcome: Sendable, Hashable {
    /// The user is new: registered with the free items owned and equipped.
    case registered
    /// The uid was registered before; nothing changed (the first profile is kept).
    case alreadyRegistered
}
