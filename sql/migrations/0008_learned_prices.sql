-- Prices learned later: a purchase recorded without a price (a classic receipt's entry while the App
-- Store Server API was not configured or did not answer) gets Apple's signed price as a new journal
-- entry, `price_learned`, never as an update of the purchase row.
--
-- - `purchase_prices` keeps what Apple's signed transaction states (price, currency, storefront, the
--   signing time and the SHA-256 of the verified evidence), one row per purchase: its key makes
--   recording the same price twice apply once. Append-only, like the other ledger tables.
-- - The `price_learned` entry is a stored entry (`journal_entry_rows`, `posting_rows`), numbered
--   after the purchase's entries so far, effective when Apple signed the price. It books the
--   revenue the purchase entry could not: receivable +price, revenue -price. When the purchase is
--   refunded at that moment (its refund entry posted nothing, having no price), the entry also books
--   that refund: refunds +price, receivable -price, so net revenue is zero as for any refunded
--   purchase. Refunds and reversals after it post the learned price like the purchase's own.
-- - A price entry does not change a purchase's state: `purchase_state_after('price_learned')` is NULL,
--   and a purchase's state is its latest entry that has one.
-- Not additive: a binary from before this migration would take a price entry for the purchase's
-- state and would refund a late-priced purchase without posting its price.

CREATE TABLE purchase_prices (
    transaction_id ledger_transaction_id NOT NULL,
    store ledger_store NOT NULL,
    environment ledger_environment NOT NULL,
    price_milli bigint NOT NULL CHECK (price_milli >= 0),
    currency ledger_currency NOT NULL,
    storefront text,
    -- When the store signed the transaction stating the price: the entry's effective time.
    signed_at timestamptz NOT NULL,
    evidence_sha256 ledger_sha256 NOT NULL,
    -- The `price_learned` entry that booked it.
    entry_id bigint NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (transaction_id, store, environment),
    FOREIGN KEY (transaction_id, store, environment) REFERENCES purchases (transaction_id, store, environment),
    FOREIGN KEY (transaction_id, entry_id) REFERENCES journal_entry_rows (transaction_id, entry_id)
);

CREATE TRIGGER purchase_prices_append_only BEFORE UPDATE OR DELETE ON purchase_prices
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER purchase_prices_no_truncate BEFORE TRUNCATE ON purchase_prices
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
ALTER TABLE purchase_prices ENABLE ALWAYS TRIGGER purchase_prices_append_only;
ALTER TABLE purchase_prices ENABLE ALWAYS TRIGGER purchase_prices_no_truncate;

-- The new kind. Only refunds, reversals and revokes name a refund event.
ALTER TABLE journal_entry_rows DROP CONSTRAINT journal_entries_kind_check,
    DROP CONSTRAINT journal_entries_check1,
    ADD CONSTRAINT journal_entry_rows_kind_check
        CHECK (kind IN ('purchase', 'refund', 'refund_reversal', 'family_revoke', 'price_learned')),
    ADD CONSTRAINT journal_entry_rows_refund_event_check
        CHECK ((kind IN ('refund', 'refund_reversal', 'family_revoke')) = (refund_event_id IS NOT NULL));

-- A price entry leaves the state as it was.
CREATE OR REPLACE FUNCTION purchase_state_after(entry_kind text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE entry_kind WHEN 'refund' THEN 'refunded' WHEN 'family_revoke' THEN 'revoked'
                       WHEN 'price_learned' THEN NULL ELSE 'live' END;

-- What a sync asks the store to price: few rows (only unpriced, bought purchases get an entry).
CREATE INDEX purchases_unpriced ON purchases (recorded_at) WHERE price_milli IS NULL AND ownership = 'PURCHASED';
