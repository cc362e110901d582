-- shopledger: additive
-- The report day cache (0013) split by store (issue 43: reports by store). The reports give every
-- revenue figure per store (App Store, Google Play) beside the all-store totals, so a cached day keeps
-- its entry rows per store, and its buyers per store beside the all-store ones. Derived data, like all
-- of 0013: no ledger table is touched.
--
-- - `report_day_entries.store`: the store of the entries a row counts. A row per store where there was
--   one per day, kind, book, currency, item, ownership and price; an older build reading them sums them
--   as before. NULL only in a row an older build wrote.
-- - `report_day_store_buyers`: the day's distinct buyers per store (item, kind and currency levels), as
--   the buyer query returns them per store. The all-store rows stay in `report_day_buyers`, as an older
--   build reads them.
-- - `report_days.by_store`: the day was filled with both (by a build that knows stores). A reader that
--   splits by store uses only such days; its fill deletes and refills a day an older build filled.
--
-- Additive: an older build fills days without `by_store` (false) and reads them, or a newer build's,
-- unchanged; the rows go with their day (ON DELETE CASCADE), as 0013's do.

ALTER TABLE report_days ADD COLUMN by_store boolean NOT NULL DEFAULT false;

ALTER TABLE report_day_entries ADD COLUMN store text;

CREATE TABLE report_day_store_buyers (
    time_zone text NOT NULL,
    day date NOT NULL,
    store text NOT NULL,
    book text NOT NULL,
    currency text,
    item_kind text,
    item_index integer,
    level integer NOT NULL,
    buyers bigint NOT NULL,
    first_time_buyers bigint NOT NULL,
    FOREIGN KEY (time_zone, day) REFERENCES report_days ON DELETE CASCADE
);
CREATE INDEX report_day_store_buyers_by_day ON report_day_store_buyers (time_zone, day);
