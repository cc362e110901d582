import Foundation
import Postgres

/// Reads the catalog, which is data (seeded by the first migration, changed by operators since
/// migration 0017: `CatalogStore+Admin`), not code. Nothing is cached: every call reads the table, so
/// an item added or retired is shown at once, on every server.
public struct CatalogStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Every item, retired ones included (they are still owned), faces first, each kind by index.
    public func allItems() async throws -> [CatalogItem] {
        let rows = try await client.query(
            """
            SELECT \(unsafeSQL: Self.itemColumns)
            FROM catalog_items
            ORDER BY CASE kind WHEN 'face' THEN 0 ELSE 1 END, item_index
            """)
        return try rows.map(Self.item)
    }

    /// The columns ``item(_:)`` decodes, in its order.
    static let itemColumns =
        "kind, item_index, product_id, name, description, price_milli, currency, name_en, retired_at, google_product_id"

    static func item(_ row: PostgresRow) throws -> CatalogItem {
        let (kind, index, productId, name, description, priceMilli, currency, nameEn, retiredAt, googleProductId) =
            try row.decode((String, Int, String?, String, String, Int64, String, String?, Date?, String?).self)
        guard let itemKind = ItemKind(rawValue: kind) else {
            throw PostgresError(code: .decoding, message: "catalog_items has an unknown kind \(kind)")
        }
        return CatalogItem(
            kind: itemKind, index: index, productId: productId, name: name, description: description,
            price: Money(amountMilli: priceMilli, currency: currency), nameEn: nameEn, retiredAt: retiredAt,
            googleProductId: googleProductId)
    }
}
