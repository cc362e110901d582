-- The ledger: users, verified store transactions (purchases), the double-entry journal, grants
-- (ownership) and refund events.
--
-- Concurrency model: READ COMMITTED, unique constraints and INSERT ... ON CONFLICT; no shared
-- balance rows (balances are sums over postings). Per store transaction, state changes (refund,
-- reversal, family revoke) are serialised by a row lock on that transaction's `store_transactions`
-- row, never by a global lock.
--
-- Distribution (see "Growing past one machine"): tables about a store transaction carry
-- `transaction_id` (the key they would be distributed by: purchases, store_transactions,
-- journal_entries, postings, refund_events); tables about a user carry `uid` (users, grants,
-- grant_events). Under Citus, `refund_events`' key would become (transaction_id, source_event_id).
--
-- Append-only: every table here except `users` (profile, equipped items) and `grants` (current
-- ownership, rebuildable from `grant_events`) refuses UPDATE, DELETE and TRUNCATE by trigger.
-- Row locks (SELECT ... FOR UPDATE, ON CONFLICT DO UPDATE ... WHERE false) are not updates and
-- are allowed.

CREATE FUNCTION ledger_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ledger table % is append-only: % is refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'SL001',
              HINT = 'Corrections are new rows (a new journal entry), never changes to old ones.';
END
$$;

-- The account a posting goes to: production accounts are bare (`revenue:face`); every other book
-- (sandbox, xcode, localtesting, stub) prefixes its name (`sandbox:revenue:face`), so test money
-- never reaches production accounts.
CREATE FUNCTION ledger_account(book text, name text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN book = 'production' THEN name ELSE book || ':' || name END;

-- Users: the Firebase uid, an opaque sign-up profile and the equipped pair. Mutable.
CREATE TABLE users (
    uid text PRIMARY KEY CHECK (length(uid) BETWEEN 1 AND 128),
    profile jsonb NOT NULL CHECK (jsonb_typeof(profile) = 'object'),
    equipped_face smallint NOT NULL DEFAULT 0 CHECK (equipped_face >= 0),
    equipped_background smallint NOT NULL DEFAULT 0 CHECK (equipped_background >= 0),
    registered_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- One row per store transaction the ledger ever heard of, from a purchase or a refund event,
-- whichever came first. Its row lock serialises that transaction's state changes, and its
-- primary key is where a purchase and a refund arriving at the same time meet.
CREATE TABLE store_transactions (
    store text NOT NULL,
    environment text NOT NULL,
    transaction_id text NOT NULL,
    first_seen_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (store, environment, transaction_id)
);

-- Verified store transactions, one per (store, environment, transaction_id).
CREATE TABLE purchases (
    store text NOT NULL CHECK (store ~ '^[a-z_]{1,32}$'),
    environment text NOT NULL CHECK (environment ~ '^[A-Za-z]{1,32}$'),
    transaction_id text NOT NULL CHECK (length(transaction_id) BETWEEN 1 AND 128),
    original_transaction_id text NOT NULL CHECK (length(original_transaction_id) BETWEEN 1 AND 128),
    uid text NOT NULL REFERENCES users (uid),
    product_id text NOT NULL,
    item_kind text NOT NULL CHECK (item_kind IN ('face', 'background')),
    item_index smallint NOT NULL CHECK (item_index > 0),
    -- Which set of accounts the money goes to: 'production' only for App Store Production.
    book text NOT NULL CHECK (book ~ '^[a-z]{1,32}$'),
    purchased_at timestamptz NOT NULL,
    price_milli bigint CHECK (price_milli >= 0),
    currency text CHECK (currency ~ '^[A-Z]{3}$'),
    storefront text,
    ownership text NOT NULL CHECK (ownership IN ('PURCHASED', 'FAMILY_SHARED')),
    app_account_token uuid,
    signed_at timestamptz NOT NULL,
    evidence_sha256 bytea NOT NULL CHECK (length(evidence_sha256) = 32),
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (store, environment, transaction_id),
    CHECK ((price_milli IS NULL) = (currency IS NULL)),
    CHECK ((book = 'production') = (store = 'app_store' AND environment = 'Production'))
);
CREATE INDEX purchases_by_user ON purchases (uid, purchased_at);

-- The journal: one entry per business event about a store transaction. `seq` 0 is the purchase,
-- 1, 2, ... the state changes after it, so a transaction's history is a gap-free sequence and two
-- writers can never both append the same step.
CREATE TABLE journal_entries (
    entry_id bigint GENERATED ALWAYS AS IDENTITY,
    store text NOT NULL,
    environment text NOT NULL,
    transaction_id text NOT NULL,
    seq smallint NOT NULL CHECK (seq >= 0),
    kind text NOT NULL CHECK (kind IN ('purchase', 'refund', 'refund_reversal', 'family_revoke')),
    uid text NOT NULL,
    book text NOT NULL,
    -- The refund event that called for a state change (NULL for the purchase entry).
    refund_event_id text,
    effective_at timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (transaction_id, entry_id),
    UNIQUE (store, environment, transaction_id, seq),
    FOREIGN KEY (store, environment, transaction_id) REFERENCES purchases,
    CHECK ((kind = 'purchase') = (seq = 0)),
    CHECK ((kind = 'purchase') = (refund_event_id IS NULL))
);

-- Postings: the legs of an entry; per entry and currency they sum to zero. Debits positive.
CREATE TABLE postings (
    transaction_id text NOT NULL,
    entry_id bigint NOT NULL,
    leg smallint NOT NULL CHECK (leg > 0),
    account text NOT NULL CHECK (account ~ '^[a-z_:]{1,100}$'),
    currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    amount_milli bigint NOT NULL CHECK (amount_milli <> 0),
    PRIMARY KEY (transaction_id, entry_id, leg),
    FOREIGN KEY (transaction_id, entry_id) REFERENCES journal_entries (transaction_id, entry_id)
);

-- Refund events (App Store REFUND, REFUND_REVERSED, REVOKE notifications), identified by the
-- source's event id (Apple's notificationUUID). An event for a transaction not yet recorded is
-- kept ("parked") and applied when the purchase arrives.
CREATE TABLE refund_events (
    source_event_id text PRIMARY KEY CHECK (length(source_event_id) BETWEEN 1 AND 128),
    kind text NOT NULL CHECK (kind IN ('refund', 'refund_reversal', 'family_revoke')),
    store text NOT NULL,
    environment text NOT NULL,
    transaction_id text NOT NULL,
    -- When the source signed the event; the latest refund or reversal decides the state.
    signed_at timestamptz NOT NULL,
    revocation_reason integer,
    evidence_sha256 bytea NOT NULL CHECK (length(evidence_sha256) = 32),
    arrival bigint GENERATED ALWAYS AS IDENTITY,
    received_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (store, environment, transaction_id) REFERENCES store_transactions
);
CREATE INDEX refund_events_by_transaction ON refund_events (transaction_id, store, environment);

-- Current ownership, one row per (user, item): how many live purchases and live family-shared
-- purchases back it, and whether it is the free item. Mutable; equal to the replay of
-- grant_events, updated in the same statement as the journal.
CREATE TABLE grants (
    uid text NOT NULL REFERENCES users (uid),
    item_kind text NOT NULL CHECK (item_kind IN ('face', 'background')),
    item_index smallint NOT NULL CHECK (item_index >= 0),
    free boolean NOT NULL DEFAULT false,
    purchased_count integer NOT NULL DEFAULT 0 CHECK (purchased_count >= 0),
    shared_count integer NOT NULL DEFAULT 0 CHECK (shared_count >= 0),
    owned boolean GENERATED ALWAYS AS (free OR purchased_count > 0 OR shared_count > 0) STORED,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (uid, item_kind, item_index),
    CHECK (free = (item_index = 0))
);

-- The history of grants: every change of a grant's counts, append-only.
CREATE TABLE grant_events (
    uid text NOT NULL,
    event_id bigint GENERATED ALWAYS AS IDENTITY,
    item_kind text NOT NULL,
    item_index smallint NOT NULL,
    source text NOT NULL CHECK (source IN ('free', 'purchased', 'family_shared')),
    delta smallint NOT NULL CHECK (delta IN (-1, 1)),
    cause text NOT NULL CHECK (cause IN ('register', 'purchase', 'refund', 'refund_reversal', 'family_revoke')),
    -- The store transaction and journal entry behind the change (NULL for free items).
    store text,
    environment text,
    transaction_id text,
    entry_id bigint,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (uid, event_id),
    CHECK ((source = 'free') = (transaction_id IS NULL)),
    CHECK ((source = 'free') = (cause = 'register'))
);

CREATE TRIGGER store_transactions_append_only BEFORE UPDATE OR DELETE ON store_transactions
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER store_transactions_no_truncate BEFORE TRUNCATE ON store_transactions
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER purchases_append_only BEFORE UPDATE OR DELETE ON purchases
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER purchases_no_truncate BEFORE TRUNCATE ON purchases
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER journal_entries_append_only BEFORE UPDATE OR DELETE ON journal_entries
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER journal_entries_no_truncate BEFORE TRUNCATE ON journal_entries
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER postings_append_only BEFORE UPDATE OR DELETE ON postings
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER postings_no_truncate BEFORE TRUNCATE ON postings
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER refund_events_append_only BEFORE UPDATE OR DELETE ON refund_events
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER refund_events_no_truncate BEFORE TRUNCATE ON refund_events
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER grant_events_append_only BEFORE UPDATE OR DELETE ON grant_events
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER grant_events_no_truncate BEFORE TRUNCATE ON grant_events
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
