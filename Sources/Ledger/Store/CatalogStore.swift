import Postgres

/// Reads the catalog, which is data (seeded by the first migration), not code.
public struct CatalogStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Every item, faces first, each kind by index.
    public func allItems() async throws -> [CatalogItem] {
        let rows = try await client.query(
            """
            SELECT kind, item_index, product_id, name, description, price_milli, currency
            FROM catalog_items
            ORDER BY CASE kind WHEN 'face' THEN 0 ELSE 1 END, item_index
            """)
        return try rows.map { row in
            let (kind, index, productId, name, description, priceMilli, currency) =
                try row.decode((String, Int, String?, String, String, Int64, String).self)
            guard let itemKind = ItemKind(rawValue: kind) else {
                throw PostgresError(code: .decoding, message: "catalog_items has an unknown kind \(kind)")
            }
            return CatalogItem(
                kind: itemKind, index: index, productId: productId, name: name, description: description,
                price: Money(amountMilli: priceMilli, currency: currency))
        }
    }
}
