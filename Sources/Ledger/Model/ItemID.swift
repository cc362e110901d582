/// Identifies a catalog item: its kind and its index within that kind (index 0 is the free item).
public struct ItemID: Sendable, Hashable, Codable, CustomStringConvertible {
    public var kind: ItemKind
    public var index: Int

    public init(kind: ItemKind, index: Int) {
        self.kind = kind
        self.index = index
    }

    public static func face(_ index: Int) -> ItemID { ItemID(kind: .face, index: index) }
    public static func background(_ index: Int) -> ItemID { ItemID(kind: .background, index: index) }

    /// Index 0 of each kind is free and owned by everyone.
    public var isFree: Bool { index == 0 }

    public var description: String { "\(kind.rawValue) \(index)" }
}
