-- shopledger: additive
-- First purchases (issue 16): each user's earliest purchase per book that was priced when recorded
-- and bought for themselves, the report's definition of a first-time buyer. A derived projection of
-- `purchases`, not a ledger table: the ledger's rows stay append-only; this one is rebuilt from them.
--
-- Why: the daily report probed `purchases_by_user` once per purchase in its 14-day window (~500,000
-- probes at 10M purchases, each also reading a table row since 0007). With this table the report
-- reads the window's first purchases by a range scan on `first_at` instead.
--
-- Who keeps it: never the purchase statement (the write path must not get slower, and one row per
-- purchase would be a hot spot). A catch-up (`FirstPurchaseCatchUp`, before each report on a primary
-- and periodically in `serve`) folds in purchases recorded since `first_purchases_watermark`, then
-- moves the watermark to a horizon before which every purchase is committed: `recorded_at` defaults
-- to now(), the recording transaction's start, so a purchase recorded before the oldest transaction
-- still open (or before the catch-up itself) is already visible to it. The upsert keeps the least
-- `first_at`, so folding a purchase in twice changes nothing. Readers take the least of this table
-- and the purchases recorded since the watermark, so they are right whatever the catch-up's state,
-- and read only (a standby can run them).

CREATE TABLE first_purchases (
    uid text NOT NULL,
    book ledger_book NOT NULL,
    first_at timestamptz NOT NULL,
    PRIMARY KEY (uid, book)
);
-- A report window's first purchases.
CREATE INDEX first_purchases_by_first_at ON first_purchases (first_at);

-- One row: every purchase recorded before `caught_up_to` (less the readers' overlap) is folded in.
CREATE TABLE first_purchases_watermark (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    caught_up_to timestamptz NOT NULL
);

-- The latest instant before which every purchase of this database is committed: the start of the
-- oldest other open transaction (its now(), which its purchases' recorded_at defaults to), or this
-- statement's start when none is open. NULL when some session's transaction cannot be seen (another
-- role without pg_read_all_stats): then nothing is known and the watermark does not move.
-- Autovacuum workers record no purchase.
CREATE FUNCTION ledger_first_purchases_horizon() RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN bool_or(a.backend_type = 'client backend' AND a.state IS NULL) THEN NULL
                ELSE least(statement_timestamp(), min(a.xact_start)) END
    FROM pg_stat_activity a
    WHERE a.datid = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND a.pid <> pg_backend_pid() AND a.backend_type <> 'autovacuum worker'
$$;

-- The horizon first (the fill below takes its snapshot after it, so it sees every purchase recorded
-- before it), then the existing purchases.
INSERT INTO first_purchases_watermark (caught_up_to)
SELECT coalesce(ledger_first_purchases_horizon(), '-infinity');

INSERT INTO first_purchases (uid, book, first_at)
SELECT uid, book, min(purchased_at)
FROM purchases
WHERE ownership = 'PURCHASED' AND currency IS NOT NULL
GROUP BY uid, book;
