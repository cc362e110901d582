/// The face and background a user shows (indexes within their kind).
public struct EquippedItems: Sendable, Hashable, Codable {
    public var face: Int
    public var background: Int

    public init(face: Int, background: Int) {
        self.face = face
        self.background = background
    }

    /// What every new user starts with: the free items.
    public static let initial = EquippedItems(face: 0, background: 0)
}
