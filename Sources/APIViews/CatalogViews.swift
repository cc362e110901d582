import Foundation
import Ledger

/// A catalog item as `GET /api/v1/catalog` and `/api/v1/admin/catalog` answer it and
/// `shopledger catalog list --json` prints it. `productId` (free items), `googleProductId` (items not sold
/// on Google Play), `nameEn` (the seeded items) and `retiredAt` (items on sale) are null when empty.
public struct CatalogItemView: Encodable, Sendable, Equatable {
    public let kind: String
    public let index: Int
    @NullWhenNil public var productId: String?
    /// The item's Google Play product id (docs/google-play.md).
    @NullWhenNil public var googleProductId: String?
    public let name: String
    public let description: String
    /// Integer milliunits of its currency (`{"amountMilli": 2500000, "currency": "KRW"}` is ₩2,500).
    public let price: Money
    @NullWhenNil public var nameEn: String?
    public let retired: Bool
    @NullWhenNil public var retiredAt: String?

    public init(_ item: CatalogItem) {
        kind = item.kind.rawValue
        index = item.index
        productId = item.productId
        googleProductId = item.googleProductId
        name = item.name
        description = item.description
        price = item.price
        nameEn = item.nameEn
        retired = item.isRetired
        retiredAt = item.retiredAt.map(ViewJSON.timestamp)
    }
}

/// The catalog: every item, faces then backgrounds, retired ones included.
public struct CatalogView: Encodable, Sendable, Equatable {
    public let items: [CatalogItemView]

    public init(_ items: [CatalogItem]) {
        self.items = items.map(CatalogItemView.init)
    }
}

/// A catalog change as recorded: who, why, when, what, and the item after it (`nameBefore` and
/// `nameEnBefore` null but for a rename).
public struct CatalogChangeView: Encodable, Sendable, Equatable {
    public let changeId: Int64
    public let change: String
    public let item: CatalogItemView
    @NullWhenNil public var nameBefore: String?
    @NullWhenNil public var nameEnBefore: String?
    public let actor: String
    public let reason: String
    public let changedAt: String

    public init(_ change: CatalogChange) {
        changeId = change.changeId
        self.change = change.kind.rawValue
        item = CatalogItemView(change.item)
        nameBefore = change.nameBefore
        nameEnBefore = change.nameEnBefore
        actor = change.actor
        reason = change.reason
        changedAt = ViewJSON.timestamp(change.changedAt)
    }
}
