-- shopledger: additive
-- The report day cache (issue 16): the daily report's figures per local day, kept for days that are
-- over. A derived projection of the ledger like `first_purchases` (0011), not a ledger table: rows are
-- deleted when something recorded later touches their day, and filled again from the ledger.
--
-- Why: the daily report's trend is 14 days, each a period; at 10M purchases grouping and
-- distinct-counting those days' ~500,000 purchases and ~525,000 entries took most of its time. A day's
-- figures depend only on the entries effective that day (in the report's time zone) and on each
-- buyer's first purchase, so a day that is over can be read back instead of computed.
--
-- Who keeps it: never the purchase statement (no trigger, no index on the ledger's tables). The
-- daily report fills the days of its trend it lacks, on a primary, in a transaction of its own that
-- holds the first-purchase catch-up's lock; the catch-up (`FirstPurchaseCatchUp`, before each report,
-- every 30 s in `serve`, after a seed) deletes every cached day that the entries recorded since its
-- watermark can change, before moving that watermark. Readers treat as uncached, and compute, every
-- day the entries recorded since the watermark (less the overlap) can change, so a report reads the
-- same whatever the cache holds, and stays read-only (a standby reads the cache it replicates).

-- One row per cached (time zone, local day); the day's boundaries as the database drew them when it
-- was filled (a reader uses the day only if they still match: a time zone's rules can change).
CREATE TABLE report_days (
    time_zone text NOT NULL,
    day date NOT NULL,
    starts_at timestamptz NOT NULL,
    ends_at timestamptz NOT NULL,
    filled_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (time_zone, day)
);

-- The day's rows of the report's entry query (journal entries per kind, book, currency, item,
-- ownership and unit price), as that query returns them.
CREATE TABLE report_day_entries (
    time_zone text NOT NULL,
    day date NOT NULL,
    kind text NOT NULL,
    book text NOT NULL,
    currency text,
    item_kind text NOT NULL,
    item_index integer NOT NULL,
    ownership text NOT NULL,
    price_milli bigint,
    entries bigint NOT NULL,
    FOREIGN KEY (time_zone, day) REFERENCES report_days ON DELETE CASCADE
);
CREATE INDEX report_day_entries_by_day ON report_day_entries (time_zone, day);

-- The day's rows of the report's buyer query (distinct buyers and first-time buyers at each level).
CREATE TABLE report_day_buyers (
    time_zone text NOT NULL,
    day date NOT NULL,
    book text NOT NULL,
    currency text,
    item_kind text,
    item_index integer,
    level integer NOT NULL,
    buyers bigint NOT NULL,
    first_time_buyers bigint NOT NULL,
    FOREIGN KEY (time_zone, day) REFERENCES report_days ON DELETE CASCADE
);
CREATE INDEX report_day_buyers_by_day ON report_day_buyers (time_zone, day);
