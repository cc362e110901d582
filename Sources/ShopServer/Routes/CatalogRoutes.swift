import Hummingbird
import Ledger

/// `GET /api/v1/catalog`: every item with its kind, index, product id, name, description and price.
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

        init(_ item: CatalogItem) {
            kind = item.kind.rawValue
            index = item.index
            productId = item.productId
            name = item.name
            description = item.description
            price = item.price
        }

        // productId is written as null for free items rather than left out: clients see every key.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(kind, forKey: .kind)
            try container.encode(index, forKey: .index)
            try container.encode(productId, forKey: .productId)
            try container.encode(name, forKey: .name)
            try container.encode(description, forKey: .description)
            try container.encode(price, forKey: .price)
        }

        enum CodingKeys: String, CodingKey { case kind, index, productId, name, description, price }
    }

    func register(on group: RouterGroup<some RequestContext>) {
        group.get("catalog") { _, _ in
            Body(items: try await catalog.allItems().map(Item.init))
        }
    }
}
