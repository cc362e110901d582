import Hummingbird
import Ledger

/// `GET /api/v1/catalog`: every item with its kind, index, product id, name, description and price,
/// and (since migration 0017) its English name and whether it is retired. Retired items stay listed:
/// whoever bought one still owns and shows it, so a client needs its name; a client that sells from
/// this list skips the items with `retired: true` (the server refuses to sell them anyway).
/// Read from the database on each request: an item added or retired shows at once.
struct CatalogRoutes {
    let catalog: CatalogStore

    struct Body: ResponseEncodable {
        let items: [Item]
    }

    struct Item: Encodable {
        let kind: String
        let index: Int
        let productId: String?
        let name: String
        let description: String
        let price: Money
        let nameEn: String?
        let retired: Bool
        let retiredAt: String?

        init(_ item: CatalogItem) {
            kind = item.kind.rawValue
            index = item.index
            productId = item.productId
            name = item.name
            description = item.description
            price = item.price
            nameEn = item.nameEn
            retired = item.isRetired
            retiredAt = item.retiredAt.map(UserDocument.timestamp)
        }

        // productId (free items), nameEn (the seeded items) and retiredAt (items on sale) are written as
        // null rather than left out: clients see every key. The keys before nameEn never change.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(kind, forKey: .kind)
            try container.encode(index, forKey: .index)
            try container.encode(productId, forKey: .productId)
            try container.encode(name, forKey: .name)
            try container.encode(description, forKey: .description)
            try container.encode(price, forKey: .price)
            try container.encode(nameEn, forKey: .nameEn)
            try container.encode(retired, forKey: .retired)
            try container.encode(retiredAt, forKey: .retiredAt)
        }

        enum CodingKeys: String, CodingKey {
            case kind, index, productId, name, description, price, nameEn, retired, retiredAt
        }
    }

    func register(on group: RouterGroup<some RequestContext>) {
        group.get("catalog") { _, _ in
            Body(items: try await catalog.allItems().map(Item.init))
        }
    }
}
