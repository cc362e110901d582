/// What holds for the catalog as data (migration 0017), checked with the ledger's other invariants.
enum CatalogInvariants {
    /// No purchase of a retired item was recorded for a purchase date on or after its retirement
    /// after it was retired (the purchase statement refuses those); every retired item has its one
    /// `retire` change at `retired_at`; every item's names are those its last change left (items
    /// without changes are the seeded ones, with no English name); every Google Play product id has the
    /// one `google_product` change that set it (migration 0024); and the trigger that keeps catalog rows
    /// and their fixed columns is enabled ALWAYS.
    static let audited = SQLReconciliationCheck(
        name: "catalog_audited",
        summary: "No purchase of a retired item dated on or after its retirement was recorded after it; every "
            + "retirement, rename, addition and Google Play product id has its catalog change, and catalog rows cannot be removed or their "
            + "kind, index, product id and price changed (a trigger enabled ALWAYS).",
        examinedWhat: "catalog items",
        examinedSQL: "SELECT count(*) FROM catalog_items",
        failuresSQL: """
            WITH last_change AS (
                SELECT DISTINCT ON (item_kind, item_index) item_kind::text AS kind, item_index, name_after, name_en_after
                FROM catalog_changes ORDER BY item_kind, item_index, change_id DESC
            )
            SELECT 'purchase ' || p.store || '/' || p.environment || '/' || p.transaction_id,
                   'of ' || c.kind || ' ' || c.item_index || ', retired at ' || c.retired_at
                   || ', bought at ' || p.purchased_at || ' and recorded at ' || p.recorded_at
            FROM purchases p
            JOIN catalog_items c ON (p.store <> 'google_play' AND c.product_id = p.product_id)
                                 OR (p.store = 'google_play' AND c.google_product_id = p.product_id)
            WHERE c.retired_at IS NOT NULL AND p.purchased_at >= c.retired_at AND p.recorded_at >= c.retired_at
            UNION ALL
            SELECT c.kind || ' ' || c.item_index,
                   format('retired at %s with %s retire changes at that time, expected one', c.retired_at, count(g.change_id))
            FROM catalog_items c
            LEFT JOIN catalog_changes g ON g.item_kind = c.kind AND g.item_index = c.item_index AND g.change = 'retire'
                 AND g.changed_at = c.retired_at
            WHERE c.retired_at IS NOT NULL
            GROUP BY c.kind, c.item_index, c.retired_at HAVING count(g.change_id) <> 1
            UNION ALL
            SELECT c.kind || ' ' || c.item_index, 'a retire change, but the item is not retired'
            FROM catalog_items c
            WHERE c.retired_at IS NULL AND EXISTS (
                SELECT 1 FROM catalog_changes g
                WHERE g.item_kind = c.kind AND g.item_index = c.item_index AND g.change = 'retire')
            UNION ALL
            SELECT c.kind || ' ' || c.item_index,
                   CASE WHEN l.kind IS NULL THEN 'an English name, but no catalog change sets it'
                        ELSE format('named %s / %s, its last change says %s / %s',
                                    c.name, c.name_en, l.name_after, l.name_en_after) END
            FROM catalog_items c LEFT JOIN last_change l ON l.kind = c.kind AND l.item_index = c.item_index
            WHERE (l.kind IS NULL AND c.name_en IS NOT NULL)
               OR (l.kind IS NOT NULL AND (c.name <> l.name_after OR c.name_en IS DISTINCT FROM l.name_en_after))
            UNION ALL
            SELECT c.kind || ' ' || c.item_index,
                   format('sold on Google Play as %s with %s google_product changes naming it, expected one',
                          coalesce(c.google_product_id, '(none)'), count(g.change_id))
            FROM catalog_items c
            LEFT JOIN catalog_changes g ON g.item_kind = c.kind AND g.item_index = c.item_index
                 AND g.change = 'google_product'
            GROUP BY c.kind, c.item_index, c.google_product_id
            HAVING count(g.change_id) <> (c.google_product_id IS NOT NULL)::int
                OR count(g.change_id) FILTER (WHERE g.google_product_id IS DISTINCT FROM c.google_product_id) > 0
            UNION ALL
            SELECT 'catalog_items', 'no trigger enabled ALWAYS refusing ' || op.name
            FROM (VALUES ('UPDATE', 17), ('DELETE', 9), ('TRUNCATE', 32)) AS op (name, bits)
            WHERE NOT EXISTS (
                SELECT 1 FROM pg_trigger tg JOIN pg_proc f ON f.oid = tg.tgfoid
                WHERE tg.tgrelid = 'catalog_items'::regclass AND f.proname = 'catalog_refuse_change'
                  AND tg.tgenabled = 'A' AND (tg.tgtype & op.bits) = op.bits
            )
            """)
}
