import Foundation
import Postgres

/// Catalog administration (migration 0017): add, rename and retire items while the shop runs. Each
/// is one statement that changes `catalog_items` and writes its audit row (`catalog_changes`: who,
/// why, when, the names before and after) together, as support actions are written; on any refusal
/// nothing is written. Every reader reads the table on each request, so a change is live at once on
/// every server: an added item is sold, owned, shown and reported; a retired one is no longer sold
/// (the purchase statement refuses a purchase dated on or after `retired_at`), still owned,
/// equippable, shown and reported.
extension CatalogStore {
    /// Adds a paid item. Its index is any unused one of its kind from 1 to 32767 (the next free index
    /// is the usual choice; gaps are allowed). Its kind, index, product id and price never change
    /// afterwards.
    ///
    /// - Throws: `LedgerError` `.invalidInput` (a bad actor, reason, index, product id, name,
    ///   description or price), `.itemIndexTaken`, `.productIdTaken`; nothing is written then.
    public func add(_ new: NewCatalogItem, _ request: SupportRequest) async throws -> CatalogChange {
        try request.validate()
        try new.validate()
        let kind = new.item.kind.rawValue
        let row = try await refusingChecks(
            """
            WITH added AS (
                INSERT INTO catalog_items (kind, item_index, product_id, name, name_en, description, price_milli, currency)
                VALUES (\(kind)::text, \(new.item.index)::smallint, \(new.productId)::text, \(new.name)::text,
                        \(new.nameEn)::text, \(new.description)::text, \(new.price.amountMilli)::bigint,
                        \(new.price.currency)::text)
                ON CONFLICT DO NOTHING
                RETURNING kind, item_index, product_id, price_milli, currency, name, name_en
            ),
            change AS (
                INSERT INTO catalog_changes (change, item_kind, item_index, product_id, price_milli, currency,
                    name_after, name_en_after, actor, reason)
                SELECT 'add', kind, item_index, product_id, price_milli, currency, name, name_en,
                       \(request.actor)::text, \(request.reason)::text
                FROM added
                RETURNING change_id, changed_at
            )
            SELECT (SELECT change_id FROM change), (SELECT changed_at FROM change),
                   (SELECT coalesce(product_id, 'the free item') FROM catalog_items
                    WHERE kind = \(kind)::text AND item_index = \(new.item.index)) AS index_holder,
                   (SELECT kind || ' ' || item_index FROM catalog_items
                    WHERE product_id = \(new.productId)::text) AS product_holder
            """
        ).single()
        let (changeId, changedAt, indexHolder, productHolder) = try row.decode((Int64?, Date?, String?, String?).self)
        guard let changeId, let changedAt else {
            if let indexHolder {
                throw LedgerError(.itemIndexTaken, "\(new.item) is taken (by \(indexHolder))")
            }
            if let productHolder {
                throw LedgerError(.productIdTaken, "product id \(new.productId) is taken (by \(productHolder))")
            }
            throw LedgerError(
                .itemIndexTaken,
                "another item with \(new.item) or product id \(new.productId) was added at the same time")
        }
        let item = CatalogItem(
            kind: new.item.kind, index: new.item.index, productId: new.productId, name: new.name,
            description: new.description, price: new.price, nameEn: new.nameEn, retiredAt: nil)
        return CatalogChange(
            changeId: changeId, kind: .add, item: item, nameBefore: nil, nameEnBefore: nil, actor: request.actor,
            reason: request.reason, changedAt: changedAt)
    }

    /// Renames an item: its Korean name, its English name, or both (a name left nil stays). The free
    /// items may be renamed too. Purchases and grants name items by kind and index, so they follow.
    ///
    /// - Throws: `LedgerError` `.invalidInput` (no name given, a bad name, actor or reason),
    ///   `.noSuchItem`; nothing is written then.
    public func rename(
        _ item: ItemID, name: String?, nameEn: String?, _ request: SupportRequest
    ) async throws -> CatalogChange {
        try request.validate()
        try CatalogRules.existingIndex(item)
        guard name != nil || nameEn != nil else {
            throw LedgerError(.invalidInput, "give a new Korean name, a new English name, or both")
        }
        if let name { try CatalogRules.name(name, what: "the Korean name") }
        if let nameEn { try CatalogRules.name(nameEn, what: "the English name") }
        let rows = try await refusingChecks(
            """
            WITH target AS (
                SELECT kind, item_index, name, name_en FROM catalog_items
                WHERE kind = \(item.kind.rawValue)::text AND item_index = \(item.index)
                FOR UPDATE
            ),
            renamed AS (
                UPDATE catalog_items c
                SET name = coalesce(\(name)::text, c.name), name_en = coalesce(\(nameEn)::text, c.name_en)
                FROM target t
                WHERE c.kind = t.kind AND c.item_index = t.item_index
                RETURNING \(unsafeSQL: Self.itemColumnsOfC),
                          t.name AS name_before, t.name_en AS name_en_before
            ),
            change AS (
                INSERT INTO catalog_changes (change, item_kind, item_index, product_id, price_milli, currency,
                    name_before, name_en_before, name_after, name_en_after, actor, reason)
                SELECT 'rename', kind, item_index, product_id, price_milli, currency, name_before, name_en_before,
                       name, name_en, \(request.actor)::text, \(request.reason)::text
                FROM renamed
                RETURNING change_id, changed_at
            )
            SELECT r.*, c.change_id, c.changed_at FROM renamed r, change c
            """)
        guard let row = rows.first else { throw LedgerError(.noSuchItem, "the catalog has no \(item)") }
        return try Self.change(.rename, row, request)
    }

    /// Retires a paid item: from now on a purchase of it is refused (`LedgerError.productRetired`)
    /// unless it was made before now (a late receipt, a restore, a notification); whoever has it keeps
    /// it, equips it, and the reports show it. Retiring is final. Retire the product in App Store
    /// Connect too: Apple keeps selling what is only retired here, and such purchases are refused.
    ///
    /// - Throws: `LedgerError` `.invalidInput` (index 0, a bad actor or reason), `.noSuchItem`,
    ///   `.alreadyRetired`; nothing is written then.
    public func retire(_ item: ItemID, _ request: SupportRequest) async throws -> CatalogChange {
        try request.validate()
        if item.index != 0 { try CatalogRules.existingIndex(item) }
        try CatalogRules.index(item)
        let row = try await refusingChecks(
            """
            WITH target AS (
                SELECT kind, item_index, retired_at FROM catalog_items
                WHERE kind = \(item.kind.rawValue)::text AND item_index = \(item.index)
                FOR UPDATE
            ),
            retired AS (
                UPDATE catalog_items c SET retired_at = now()
                FROM target t
                WHERE c.kind = t.kind AND c.item_index = t.item_index AND t.retired_at IS NULL
                RETURNING \(unsafeSQL: Self.itemColumnsOfC)
            ),
            change AS (
                INSERT INTO catalog_changes (change, item_kind, item_index, product_id, price_milli, currency,
                    name_before, name_en_before, name_after, name_en_after, actor, reason)
                SELECT 'retire', kind, item_index, product_id, price_milli, currency, name, name_en, name, name_en,
                       \(request.actor)::text, \(request.reason)::text
                FROM retired
                RETURNING change_id, changed_at
            )
            SELECT r.*, r.name AS name_before, r.name_en AS name_en_before, c.change_id, c.changed_at,
                   EXISTS (SELECT 1 FROM target) AS found, (SELECT retired_at FROM target) AS was_retired_at
            FROM (SELECT 1) AS one LEFT JOIN retired r ON true LEFT JOIN change c ON true
            """
        ).single()
        guard try row.decode(Bool.self, column: "found") else {
            throw LedgerError(.noSuchItem, "the catalog has no \(item)")
        }
        if let wasRetiredAt = try row.decode(Date?.self, column: "was_retired_at") {
            throw LedgerError(.alreadyRetired, "\(item) was retired already, at \(Self.timestamp(wasRetiredAt))")
        }
        return try Self.change(.retire, row, request)
    }

    /// Runs a writing statement; a CHECK of the schema that refuses a value the checks above let through
    /// is bad input like theirs (the statement wrote nothing), not a server failure.
    private func refusingChecks(_ statement: PostgresQuery) async throws -> PostgresRows {
        do {
            return try await client.query(statement)
        } catch let error as PostgresError where error.sqlState == .checkViolation {
            throw LedgerError(
                .invalidInput, "the catalog refuses this value (\(error.constraint ?? "a check of the schema"))")
        }
    }

    /// ``itemColumns`` of `catalog_items c`, for a RETURNING that joins another table.
    static let itemColumnsOfC = itemColumns.split(separator: ",")
        .map { "c." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")

    /// A change from a row of ``itemColumns``, `name_before`, `name_en_before`, `change_id`, `changed_at`.
    static func change(
        _ kind: CatalogChange.Kind, _ row: PostgresRow, _ request: SupportRequest
    ) throws
        -> CatalogChange
    {
        CatalogChange(
            changeId: try row.decode(Int64.self, column: "change_id"), kind: kind, item: try item(row),
            nameBefore: try row.decode(String?.self, column: "name_before"),
            nameEnBefore: try row.decode(String?.self, column: "name_en_before"), actor: request.actor,
            reason: request.reason, changedAt: try row.decode(Date.self, column: "changed_at"))
    }

    static func timestamp(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt).format(date)
    }
}

extension LedgerStore {
    /// Why the purchase statement found no catalog item for a purchase's product: the product is
    /// retired and the purchase dated on or after its retirement (`.productRetired`), or the catalog
    /// does not have it (`.unknownProduct`). Asked only on this refusal path, so a purchase costs no
    /// round trip more; retirement is final, so the answer agrees with what the statement saw.
    func productRefusal(_ input: PurchaseInput) async throws -> LedgerError {
        let rows = try await client.query(
            """
            SELECT retired_at FROM catalog_items
            WHERE (CASE WHEN \(input.store)::text = 'google_play' THEN google_product_id ELSE product_id END)
                  = \(input.productId)::text
              AND retired_at <= \(input.purchaseDate)::timestamptz
            """)
        if let row = rows.first, let retiredAt = try row.decode(Date?.self, at: 0) {
            return LedgerError(
                .productRetired,
                "product \(input.productId) is no longer sold: it was retired at \(CatalogStore.timestamp(retiredAt)), "
                    + "before this purchase")
        }
        return LedgerError(.unknownProduct, "product \(input.productId) is not in the catalog")
    }
}
