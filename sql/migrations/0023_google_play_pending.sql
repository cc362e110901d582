-- shopledger: additive
-- Google Play purchases whose payment was pending when the app posted them (issue 43; docs/google-play.md).
--
-- - `google_play_pending_claims`: who posted a purchase token Google said was pending (purchaseState
--   2, a payment the buyer completes later, in a shop or by bank transfer): the user the request was
--   signed in as, with the token's product and package. When Google completes the payment, its
--   ONE_TIME_PRODUCT_PURCHASED push, or the sync within Google's three days, records the purchase for
--   that user as the app's second post would have; the push names a token and a product, never a user.
--   A token is claimed once, by the first user who posts it (a recorded token of another user is
--   refused the same way). Append-only, like the other Google Play tables: a claim whose purchase is
--   recorded is the one with a `google_play_purchases` row.
--
-- Additive: an older build does not read the table and records a pending purchase only when the app
-- posts it again.

CREATE TABLE google_play_pending_claims (
    purchase_token text PRIMARY KEY CHECK (length(purchase_token) BETWEEN 1 AND 512),
    uid text NOT NULL REFERENCES users (uid),
    package_name text NOT NULL CHECK (length(package_name) BETWEEN 3 AND 255),
    product_id text NOT NULL CHECK (length(product_id) BETWEEN 1 AND 140),
    claimed_at timestamptz NOT NULL DEFAULT now()
);
-- The sync's probe: claims of the last three days.
CREATE INDEX google_play_pending_claims_by_claimed_at ON google_play_pending_claims (claimed_at);

CREATE TRIGGER google_play_pending_claims_append_only BEFORE UPDATE OR DELETE ON google_play_pending_claims
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER google_play_pending_claims_no_truncate BEFORE TRUNCATE ON google_play_pending_claims
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
ALTER TABLE google_play_pending_claims ENABLE ALWAYS TRIGGER google_play_pending_claims_append_only;
ALTER TABLE google_play_pending_claims ENABLE ALWAYS TRIGGER google_play_pending_claims_no_truncate;
