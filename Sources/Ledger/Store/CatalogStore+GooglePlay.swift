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

    /// Sells `item` on Google Play as `productId` (the Play Console's id of the same product), recorded as a
    /// catalog change with who and why (migration 0024). Set once: an item that has a Play product id keeps
    /// it (purchases and reports name it), and a Play product id names one item.
    ///
    /// - Throws: `LedgerError` `.invalidInput` (a free item, an id Google would not accept, an item that
    ///   has a Play id already, an id another item has, a bad actor or reason), `.noSuchItem`; nothing is
    ///   written then.
    @discardableResult
    public func setGoogleProductId(
        _ item: ItemID, _ productId: String, _ request: SupportRequest
    ) async throws
        -> CatalogChange
    {
        try request.validate()
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
                RETURNING \(unsafeSQL: Self.itemColumnsOfC)
            ),
            change AS (
                INSERT INTO catalog_changes (change, item_kind, item_index, product_id, price_milli, currency,
                    name_before, name_en_before, name_after, name_en_after, google_product_id, actor, reason)
                SELECT 'google_product', kind, item_index, product_id, price_milli, currency, name, name_en, name,
                       name_en, google_product_id, \(request.actor)::text, \(request.reason)::text
                FROM set
                RETURNING change_id, changed_at
            )
            SELECT s.*, s.name AS name_before, s.name_en AS name_en_before, c.change_id, c.changed_at,
                   EXISTS (SELECT 1 FROM target) AS found, (SELECT google_product_id FROM target) AS current,
                   (SELECT kind || ' ' || item_index FROM holder) AS holder
            FROM (SELECT 1) AS one LEFT JOIN set s ON true LEFT JOIN change c ON true
            """
        ).single()
        guard try row.decode(Bool.self, column: "found") else {
            throw LedgerError(.noSuchItem, "the catalog has no \(item)")
        }
        if let current = try row.decode(String?.self, column: "current") {
            throw LedgerError(.invalidInput, "\(item) is sold on Google Play as \(current) already; it never changes")
        }
        if let holder = try row.decode(String?.self, column: "holder") {
            throw LedgerError(.invalidInput, "the Play product id \(productId) is \(holder)'s already")
        }
        return try Self.change(.googleProduct, row, request)
    }
}
