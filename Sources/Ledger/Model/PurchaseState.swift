/// Where a recorded purchase stands, as its journal says (the kind of its latest entry).
public enum PurchaseState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Bought (or a refund was reversed): it backs its item.
    case live
    /// Refunded: it backs nothing; a refund reversal makes it live again.
    case refunded
    /// A family-shared purchase whose sharing was revoked; final.
    case revoked
}
