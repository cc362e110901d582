/// What a user owns and shows.
public struct Inventory: Sendable, Hashable {
    public var uid: String
    public var equipped: EquippedItems
    /// Owned face indexes, ascending; always includes 0.
    public var faces: [Int]
    /// Owned background indexes, ascending; always includes 0.
    public var backgrounds: [Int]

    public init(uid: String, equipped: EquippedItems, faces: [Int], backgrounds: [Int]) {
        self.uid = uid
        self.equipped = equipped
        self.faces = faces
        self.backgrounds = backgrounds
    }

    public func owns(_ item: ItemID) -> Bool {
        switch item.kind {
        case .face: faces.contains(item.index)
        case .background: backgrounds.contains(item.index)
        }
    }
}
