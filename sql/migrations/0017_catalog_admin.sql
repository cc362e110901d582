-- shopledger: additive
-- The catalog as data (issue 29): operators add, rename and retire items without a migration or a
-- release (`shopledger catalog …`, `/api/v1/admin/catalog`). Every reader (purchases, the catalog
-- endpoints, reports, support grants, the user documents) already reads `catalog_items` on each
-- request, so a change is live at once, on every server.
--
-- - `catalog_items` stays current state (like `grants`), but its rows are never deleted, and an
--   item's kind, index, product id and price never change: purchases, grants and reports name items
--   by (kind, index) and product id, and the price is what the item was offered at. Names and the
--   description may change (a rename); `retired_at`, once set, stays (a retired item is no longer
--   sold, still owned and reported). A trigger enabled ALWAYS refuses everything else.
-- - `name_en` is the English name; NULL for the migration-seeded items, which remain as they are.
-- - `catalog_changes` is the audit trail, append-only like `support_actions` (0010): who (the admin
--   token's label or the operator named on the command line), why (required), when, and what: the
--   change, the item, its names before and after.
--
-- Additive: an older build reads the catalog as before; it does not know `retired_at` and would
-- still sell a retired item, so retire items once every server runs this build.

ALTER TABLE catalog_items
    ADD COLUMN name_en text,
    ADD COLUMN retired_at timestamptz,
    ADD CONSTRAINT catalog_items_name_check
        CHECK (length(btrim(name)) BETWEEN 1 AND 100 AND name !~ '[[:cntrl:]]'),
    ADD CONSTRAINT catalog_items_name_en_check
        CHECK (name_en IS NULL OR (length(btrim(name_en)) BETWEEN 1 AND 100 AND name_en !~ '[[:cntrl:]]')),
    ADD CONSTRAINT catalog_items_description_check CHECK (length(description) <= 500),
    -- App Store Connect's product ids: letters, digits, underscores and periods.
    ADD CONSTRAINT catalog_items_product_id_check
        CHECK (product_id IS NULL OR product_id ~ '^[A-Za-z0-9_.]{1,100}$'),
    -- The free item of each kind is everyone's, always: it is never retired.
    ADD CONSTRAINT catalog_items_free_never_retired CHECK (item_index > 0 OR retired_at IS NULL);

CREATE FUNCTION catalog_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.kind = OLD.kind AND NEW.item_index = OLD.item_index
       AND NEW.product_id IS NOT DISTINCT FROM OLD.product_id
       AND NEW.price_milli = OLD.price_milli AND NEW.currency = OLD.currency
       AND (OLD.retired_at IS NULL OR NEW.retired_at IS NOT DISTINCT FROM OLD.retired_at) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'catalog items are never removed, and their kind, index, product id, price and retirement never change: % is refused', TG_OP
        USING ERRCODE = 'SL001',
              HINT = 'Purchases, grants and reports name catalog items; retire an item instead (shopledger catalog retire).';
END
$$;
CREATE TRIGGER catalog_items_never_removed BEFORE UPDATE OR DELETE ON catalog_items
    FOR EACH ROW EXECUTE FUNCTION catalog_refuse_change();
CREATE TRIGGER catalog_items_no_truncate BEFORE TRUNCATE ON catalog_items
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_refuse_change();
ALTER TABLE catalog_items ENABLE ALWAYS TRIGGER catalog_items_never_removed;
ALTER TABLE catalog_items ENABLE ALWAYS TRIGGER catalog_items_no_truncate;

CREATE TABLE catalog_changes (
    change_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    change text NOT NULL CHECK (change IN ('add', 'rename', 'retire')),
    item_kind ledger_item_kind NOT NULL,
    item_index smallint NOT NULL CHECK (item_index >= 0),
    -- The item's product id and price as they are (they never change), for a reader of the trail alone.
    product_id text,
    price_milli bigint NOT NULL,
    currency text NOT NULL,
    -- Names before (NULL for an add) and after the change.
    name_before text,
    name_en_before text,
    name_after text NOT NULL,
    name_en_after text,
    actor text NOT NULL CHECK (length(actor) BETWEEN 1 AND 64 AND actor !~ '[[:cntrl:]]'),
    reason text NOT NULL CHECK (length(btrim(reason)) BETWEEN 1 AND 500),
    changed_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (item_kind, item_index) REFERENCES catalog_items (kind, item_index),
    -- The free items are never added or retired; they may be renamed.
    CHECK (change = 'rename' OR item_index > 0),
    CHECK ((change = 'add') = (name_before IS NULL))
);
CREATE INDEX catalog_changes_by_item ON catalog_changes (item_kind, item_index, changed_at);

CREATE TRIGGER catalog_changes_append_only BEFORE UPDATE OR DELETE ON catalog_changes
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER catalog_changes_no_truncate BEFORE TRUNCATE ON catalog_changes
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
ALTER TABLE catalog_changes ENABLE ALWAYS TRIGGER catalog_changes_append_only;
ALTER TABLE catalog_changes ENABLE ALWAYS TRIGGER catalog_changes_no_truncate;
