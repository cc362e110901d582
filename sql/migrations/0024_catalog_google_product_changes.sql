-- shopledger: additive
-- Setting an item's Google Play product id is a catalog change like adding, renaming and retiring one
-- (issue 43; docs/google-play.md): who set it, why and when, in the append-only `catalog_changes` (0017).
--
-- - `catalog_changes.change` may be `google_product`; its row carries the Play product id set
--   (`google_product_id`, only on those rows) and the item's names before and after, both as they are
--   (setting the id renames nothing).
--
-- Additive: no build reads the trail back but to report it, and an older build writes no such change.

ALTER TABLE catalog_changes ADD COLUMN google_product_id text;
-- 0017's inline CHECK on `change` is named by PostgreSQL's convention.
ALTER TABLE catalog_changes DROP CONSTRAINT catalog_changes_change_check,
    ADD CONSTRAINT catalog_changes_change_check CHECK (change IN ('add', 'rename', 'retire', 'google_product')),
    ADD CONSTRAINT catalog_changes_google_product_id_check
        CHECK ((change = 'google_product') = (google_product_id IS NOT NULL));
