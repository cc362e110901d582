-- shopledger: additive
-- Google Play beside the App Store (issue 43; docs/google-play.md).
--
-- - `catalog_items.google_product_id`: the item's product id in the Play Console, so one item is sold
--   by both stores. Set once (from NULL, by `shopledger catalog google-product` or the admin API) and
--   then never changed, like the App Store product id: purchases and reports name it.
-- - Play purchases are ordinary `purchases` rows with store `google_play`: environment `Production`
--   (book `production`) for a real purchase, `Sandbox` (book `sandbox`) for a license tester's test
--   purchase (purchaseType 0). `transaction_id` is Google's orderId, or `token:<SHA-256 of the
--   purchase token>` for a purchase without one. Recorded unpriced: Google's purchase answer carries
--   no price, and none is guessed.
-- - `google_play_purchases`: the purchase token of each Play purchase recorded (idempotency by token,
--   the voided-purchases read and the push find a purchase by it), with what is owed to Google about
--   it: an acknowledgement (Google refunds a purchase not acknowledged within three days), and a
--   consumption for a consumable product.
-- - `google_play_acknowledgements`: one row per token once Google took its acknowledgement (and
--   consumption). The server's acknowledger retries the tokens without one until Google's deadline.
--
-- - `purchases`: the production book is now App Store and Google Play Production.
--
-- Both new tables are append-only (refused UPDATE, DELETE, TRUNCATE by trigger, enabled ALWAYS).
--
-- Additive: an older build does not read the new column or tables, and sells nothing on Google Play.

ALTER TABLE catalog_items
    ADD COLUMN google_product_id text UNIQUE,
    -- Play Console product ids: lowercase letters, digits, underscores and periods, starting with a
    -- letter or digit.
    ADD CONSTRAINT catalog_items_google_product_id_check
        CHECK (google_product_id IS NULL OR (item_index > 0 AND google_product_id ~ '^[a-z0-9][a-z0-9_.]{0,139}$'));

-- The production book is App Store and Google Play Production only (it was App Store Production only:
-- 0002's unnamed CHECK, found by its text). Added NOT VALID: new rows are checked, and no existing row
-- needs to be, since the old CHECK held each to a stricter rule (App Store Production only). Validating
-- would scan every purchase under the exclusive lock this migration's transaction holds.
DO $$
DECLARE
    old_check text;
BEGIN
    SELECT conname INTO old_check FROM pg_constraint
    WHERE conrelid = 'purchases'::regclass AND contype = 'c'
      AND pg_get_constraintdef(oid) LIKE '%book%production%app_store%';
    IF old_check IS NOT NULL THEN
        EXECUTE format('ALTER TABLE purchases DROP CONSTRAINT %I', old_check);
    END IF;
END
$$;
ALTER TABLE purchases ADD CONSTRAINT purchases_production_book_check
    CHECK ((book = 'production') = (store IN ('app_store', 'google_play') AND environment = 'Production')) NOT VALID;

CREATE OR REPLACE FUNCTION catalog_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.kind = OLD.kind AND NEW.item_index = OLD.item_index
       AND NEW.product_id IS NOT DISTINCT FROM OLD.product_id
       AND NEW.price_milli = OLD.price_milli AND NEW.currency = OLD.currency
       AND (OLD.retired_at IS NULL OR NEW.retired_at IS NOT DISTINCT FROM OLD.retired_at)
       AND (OLD.google_product_id IS NULL OR NEW.google_product_id IS NOT DISTINCT FROM OLD.google_product_id) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'catalog items are never removed, and their kind, index, product ids, price and retirement never change: % is refused', TG_OP
        USING ERRCODE = 'SL001',
              HINT = 'Purchases, grants and reports name catalog items; retire an item instead (shopledger catalog retire).';
END
$$;

CREATE TABLE google_play_purchases (
    purchase_token text PRIMARY KEY CHECK (length(purchase_token) BETWEEN 1 AND 512),
    package_name text NOT NULL CHECK (length(package_name) BETWEEN 3 AND 255),
    store ledger_store NOT NULL CHECK (store = 'google_play'),
    environment ledger_environment NOT NULL,
    transaction_id ledger_transaction_id NOT NULL,
    order_id text CHECK (length(order_id) BETWEEN 1 AND 128),
    product_id text NOT NULL,
    consumable boolean NOT NULL,
    purchased_at timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (transaction_id, store, environment),
    FOREIGN KEY (store, environment, transaction_id) REFERENCES purchases (store, environment, transaction_id)
);
-- The acknowledger's probe: tokens still owed an acknowledgement, newest deadline last.
CREATE INDEX google_play_purchases_by_purchased_at ON google_play_purchases (purchased_at);

CREATE TABLE google_play_acknowledgements (
    purchase_token text PRIMARY KEY REFERENCES google_play_purchases (purchase_token),
    consumed boolean NOT NULL,
    acknowledged_at timestamptz NOT NULL DEFAULT now()
);

CREATE TRIGGER google_play_purchases_append_only BEFORE UPDATE OR DELETE ON google_play_purchases
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER google_play_purchases_no_truncate BEFORE TRUNCATE ON google_play_purchases
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER google_play_acknowledgements_append_only BEFORE UPDATE OR DELETE ON google_play_acknowledgements
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER google_play_acknowledgements_no_truncate BEFORE TRUNCATE ON google_play_acknowledgements
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
ALTER TABLE google_play_purchases ENABLE ALWAYS TRIGGER google_play_purchases_append_only;
ALTER TABLE google_play_purchases ENABLE ALWAYS TRIGGER google_play_purchases_no_truncate;
ALTER TABLE google_play_acknowledgements ENABLE ALWAYS TRIGGER google_play_acknowledgements_append_only;
ALTER TABLE google_play_acknowledgements ENABLE ALWAYS TRIGGER google_play_acknowledgements_no_truncate;
