import Postgres

extension CatalogStore {
    /// The Google Play product ids of the catalog's items, by item (migration 0021); items sold only on
    /// the App Store are absent.
    public func googleProductIds() async throws -> [ItemID: String] {
        let rows = try await client.query(
            "SELECT kind, item_index, google_product_id FROM catalog_items WHERE google_product_id IS NOT NULL")
        var ids: [ItemID: String] = [:]
        for row in rows {
            let (kind, index, productId) = try row.decode((String, Int, String).self)
            guard let kind = ItemKind(rawValue: kind) else { continue }
            ids[ItemID(kind: kind, index: index)] = productId
        }
        return ids
    }

    /// Sells `item` on Google Play as `productId` (the Play Console's id of the same product). Set once:
    /// an item that has a Play product id keeps it (purchases and reports name it), and a Play product id
    /// names one item.
    ///
    /// - Throws: `LedgerError` `.invalidInput` (a free item, an id Google would not accept, an item that
    ///   has another Play id, an id another item has), `.noSuchItem`; nothing is written then.
    public func setGoogleProductId(_ item: ItemID, _ productId: String) async throws {
        guard item.index > 0 else { throw LedgerError(.invalidInput, "the free items are not sold") }
        let idOK =
            (1...140).contains(productId.utf8.count)
            && productId.utf8.allSatisfy {
                (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F || $0 == 0x2E
            }
            && productId.utf8.first.map { $0 != 0x5F && $0 != 0x2E } == true
        guard idOK else {
            throw LedgerError(
                .invalidInput,
                "a Play product id is 1–140 lowercase letters, digits, underscores and periods, starting with a letter or digit"
            )
        }
        let row = try await client.query(
            """
            WITH target AS (
                SELECT kind, item_index, google_product_id FROM catalog_items
                WHERE kind = \(item.kind.rawValue)::text AND item_index = \(item.index)
                FOR UPDATE
            ),
            holder AS (
                SELECT kind, item_index FROM catalog_items WHERE google_product_id = \(productId)::text
            ),
            set AS (
                UPDATE catalog_items c SET google_product_id = \(productId)::text
                FROM target t
                WHERE c.kind = t.kind AND c.item_index = t.item_index AND t.google_product_id IS NULL
                  AND NOT EXISTS (SELECT 1 FROM holder)
                RETURNING c.kind
            )
            SELECT EXISTS (SELECT 1 FROM target), (SELECT google_product_id FROM target),
                   (SELECT kind || ' ' || item_index FROM holder), EXISTS (SELECT 1 FROM set)
            """
        ).single()
        let (found, current, holder, set) = try row.decode((Bool, String?, String?, Bool).self)
        guard found else { throw LedgerError(.noSuchItem, "the catalog has no \(item)") }
        if set || current == productId { return }
        if let current {
            throw LedgerError(.invalidInput, "\(item) is sold on Google Play as \(current) already; it never changes")
        }
        throw LedgerError(.invalidInput, "the Play product id \(productId) is \(holder ?? "another item")'s already")
    }
}
