import Foundation

/// What the shop sells: sprout faces and backgrounds.
public enum ItemKind: String, Sendable, Hashable, Codable, CaseIterable {
    case face
    case background
}

/// An item of the catalog, identified by `(kind, index)`. Index 0 of each kind is free, owned by
/// everyone and has no product id.
public struct CatalogItem: Sendable, Hashable {
    public let kind: ItemKind
    public let index: Int
    /// The App Store product id (`com.memolease.sesac1.sproutN` / `…backgroundN`); nil for free items.
    public let productId: String?
    public let name: String
    public let description: String
    public let price: Money
    /// The English name; nil for the items the first migration seeded (migration 0017).
    public let nameEn: String?
    /// When the item was retired: no longer sold from then on, still owned and reported. nil: on sale.
    public let retiredAt: Date?
    /// The Google Play product id the item is sold as on Google Play (migration 0021); nil: App Store only.
    public let googleProductId: String?

    public init(
        kind: ItemKind, index: Int, productId: String?, name: String, description: String, price: Money,
        nameEn: String? = nil, retiredAt: Date? = nil, googleProductId: String? = nil
    ) {
        self.kind = kind
        self.index = index
        self.productId = productId
        self.name = name
        self.description = description
        self.price = price
        self.nameEn = nameEn
        self.retiredAt = retiredAt
        self.googleProductId = googleProductId
    }

    public var isFree: Bool { productId == nil }
    public var isRetired: Bool { retiredAt != nil }
    public var id: ItemID { ItemID(kind: kind, index: index) }
}
