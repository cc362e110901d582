-- Outbound webhooks (issue 29): every ledger event is written to an append-only outbox in the same
-- transaction as the event itself, so an event is never lost and never sent for something that did
-- not commit. A delivery worker in `serve` posts each event to each endpoint subscribed to it.
--
-- - `webhook_outbox`: one row per event, append-only. The rows are written by statement-level
--   triggers on the tables the events are about (purchases, journal_entry_rows, purchase_prices,
--   support_actions), so no writer, present or future, can record an event without its outbox row.
--   Each event's `data` is built here from the rows just written, once: a retry sends the same bytes.
-- - `webhook_endpoints`: where to send, which event types, the signing secret; operators' current
--   settings (mutable: enabled, failing).
-- - `webhook_pending`: the work queue, one row per (endpoint, event) not yet delivered, written by
--   the same triggers for every enabled endpoint subscribed to the event's type (a replay adds rows).
--   Rows go when delivered or given up; a worker claims rows with FOR UPDATE SKIP LOCKED and a lease.
-- - `webhook_attempts`: every attempt and its outcome, append-only.
--
-- `shopledger seed` writes synthetic history with `shopledger.webhook_events` set to 'off' for its
-- transactions: benchmark data is not news for anyone's endpoint.
--
-- The event triggers are ordinary (ENABLE ORIGIN) triggers: a logical replica applying the primary's
-- rows does not write events of its own (the primary's outbox rows replicate like any others).

CREATE SEQUENCE webhook_event_ids AS bigint;

CREATE TABLE webhook_outbox (
    event_id bigint PRIMARY KEY DEFAULT nextval('webhook_event_ids'),
    -- Written by this migration's triggers only: 'purchase.recorded', 'refund.applied', 'refund.reversed',
    -- 'purchase.revoked', 'price.learned', 'support.granted', 'support.revoked'. No CHECK: the hot path
    -- writes one row per purchase, and every CHECK is evaluated per row.
    type text NOT NULL,
    -- The user the event is about: deliveries to one endpoint are in event order per user.
    uid text NOT NULL,
    -- What it is about: the store transaction, and its journal entry (the purchase's own, a state
    -- change's or a learned price's); or a support action.
    transaction_id text,
    store text,
    environment text,
    entry_id bigint,
    action_id bigint,
    created_at timestamptz NOT NULL DEFAULT now()
);
ALTER SEQUENCE webhook_event_ids OWNED BY webhook_outbox.event_id;
-- Replays by time range; rows arrive in created_at order, so a BRIN index costs almost nothing to keep.
CREATE INDEX webhook_outbox_by_created_at ON webhook_outbox USING brin (created_at);

CREATE TABLE webhook_endpoints (
    endpoint_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url text NOT NULL CHECK (length(url) BETWEEN 8 AND 2048),
    -- NULL: every event type.
    events text[] CHECK (events IS NULL OR (cardinality(events) > 0 AND events <@ ARRAY['purchase.recorded',
        'refund.applied', 'refund.reversed', 'purchase.revoked', 'price.learned', 'support.granted',
        'support.revoked'])),
    secret text NOT NULL CHECK (length(secret) BETWEEN 24 AND 256),
    description text NOT NULL DEFAULT '' CHECK (length(description) <= 200),
    enabled boolean NOT NULL DEFAULT true,
    created_by text NOT NULL CHECK (length(created_by) BETWEEN 1 AND 64),
    created_at timestamptz NOT NULL DEFAULT now(),
    disabled_by text,
    disabled_at timestamptz,
    -- Failed attempts since the last delivery; past a threshold the endpoint is marked failing.
    consecutive_failures integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
    failing_since timestamptz,
    last_delivered_at timestamptz,
    CHECK (enabled = (disabled_at IS NULL))
);

CREATE TABLE webhook_pending (
    endpoint_id bigint NOT NULL REFERENCES webhook_endpoints,
    event_id bigint NOT NULL,
    uid text NOT NULL,
    -- When it may next be attempted: now, after a backoff, or after a claim's lease runs out.
    due_at timestamptz NOT NULL DEFAULT now(),
    attempts integer NOT NULL DEFAULT 0,
    -- When it was queued (by the event, or by a replay): retries stop after the give-up window from here.
    queued_at timestamptz NOT NULL DEFAULT now(),
    -- The claim of the worker posting it now.
    claim uuid,
    PRIMARY KEY (endpoint_id, event_id)
);
-- The head of each user's queue per endpoint (deliveries in event order per user).
CREATE INDEX webhook_pending_by_user ON webhook_pending (endpoint_id, uid, event_id);
CREATE INDEX webhook_pending_by_due_at ON webhook_pending (due_at);

CREATE TABLE webhook_attempts (
    attempt_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id bigint NOT NULL,
    event_id bigint NOT NULL,
    attempt integer NOT NULL CHECK (attempt > 0),
    started_at timestamptz NOT NULL,
    duration_ms integer NOT NULL CHECK (duration_ms >= 0),
    status_code integer,
    error text CHECK (length(error) <= 500),
    outcome text NOT NULL CHECK (outcome IN ('delivered', 'failed', 'gave_up')),
    recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_attempts_by_event ON webhook_attempts (event_id, endpoint_id);

CREATE TRIGGER webhook_outbox_append_only BEFORE UPDATE OR DELETE ON webhook_outbox
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER webhook_outbox_no_truncate BEFORE TRUNCATE ON webhook_outbox
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER webhook_attempts_append_only BEFORE UPDATE OR DELETE ON webhook_attempts
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER webhook_attempts_no_truncate BEFORE TRUNCATE ON webhook_attempts
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
ALTER TABLE webhook_outbox ENABLE ALWAYS TRIGGER webhook_outbox_append_only;
ALTER TABLE webhook_outbox ENABLE ALWAYS TRIGGER webhook_outbox_no_truncate;
ALTER TABLE webhook_attempts ENABLE ALWAYS TRIGGER webhook_attempts_append_only;
ALTER TABLE webhook_attempts ENABLE ALWAYS TRIGGER webhook_attempts_no_truncate;

-- Timestamps in the payloads as the JSON API writes them: UTC, milliseconds, `Z`.
CREATE FUNCTION webhook_time(t timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');

-- Money as the JSON API writes it, or null.
CREATE FUNCTION webhook_money(amount_milli bigint, currency text) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN amount_milli IS NULL OR currency IS NULL THEN 'null'::jsonb
            ELSE jsonb_build_object('amountMilli', amount_milli, 'currency', currency) END;

-- Whether this transaction records webhook events (`shopledger seed` turns them off for its own).
CREATE FUNCTION webhook_events_on() RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN coalesce(current_setting('shopledger.webhook_events', true), '') <> 'off';

-- Queues each new outbox event for every enabled endpoint subscribed to its type: the one place an
-- event meets the endpoints, whichever table's trigger wrote it.
CREATE FUNCTION webhook_fan_out() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_pending (endpoint_id, event_id, uid)
    SELECT w.endpoint_id, e.event_id, e.uid
    FROM new_events e JOIN webhook_endpoints w ON w.enabled AND (w.events IS NULL OR e.type = ANY (w.events));
    RETURN NULL;
END
$$;
CREATE TRIGGER webhook_outbox_fan_out AFTER INSERT ON webhook_outbox
    REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION webhook_fan_out();

-- purchase.recorded: a verified purchase recorded (bought or family-shared; priced or not yet).
CREATE FUNCTION webhook_purchases() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT webhook_events_on() THEN RETURN NULL; END IF;
    INSERT INTO webhook_outbox (type, uid, transaction_id, store, environment, entry_id)
    SELECT 'purchase.recorded', uid, transaction_id, store, environment, entry_id FROM new_purchases ORDER BY entry_id;
    RETURN NULL;
END
$$;
CREATE TRIGGER purchases_webhook_events AFTER INSERT ON purchases
    REFERENCING NEW TABLE AS new_purchases FOR EACH STATEMENT EXECUTE FUNCTION webhook_purchases();

-- refund.applied, refund.reversed, purchase.revoked: a state change's journal entry.
CREATE FUNCTION webhook_journal_entries() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT webhook_events_on() THEN RETURN NULL; END IF;
    INSERT INTO webhook_outbox (type, uid, transaction_id, store, environment, entry_id)
    SELECT CASE kind WHEN 'refund' THEN 'refund.applied' WHEN 'refund_reversal' THEN 'refund.reversed'
                     ELSE 'purchase.revoked' END,
           uid, transaction_id, store, environment, entry_id
    FROM new_entries
    WHERE kind IN ('refund', 'refund_reversal', 'family_revoke')
    ORDER BY entry_id;
    RETURN NULL;
END
$$;
CREATE TRIGGER journal_entry_rows_webhook_events AFTER INSERT ON journal_entry_rows
    REFERENCING NEW TABLE AS new_entries FOR EACH STATEMENT EXECUTE FUNCTION webhook_journal_entries();

-- price.learned: Apple's signed price for a purchase recorded without one.
CREATE FUNCTION webhook_purchase_prices() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT webhook_events_on() THEN RETURN NULL; END IF;
    INSERT INTO webhook_outbox (type, uid, transaction_id, store, environment, entry_id)
    SELECT 'price.learned', p.uid, n.transaction_id, n.store, n.environment, n.entry_id
    FROM new_prices n
    JOIN purchases p ON p.transaction_id = n.transaction_id AND p.store = n.store AND p.environment = n.environment
    ORDER BY n.entry_id;
    RETURN NULL;
END
$$;
CREATE TRIGGER purchase_prices_webhook_events AFTER INSERT ON purchase_prices
    REFERENCING NEW TABLE AS new_prices FOR EACH STATEMENT EXECUTE FUNCTION webhook_purchase_prices();

-- support.granted, support.revoked: a compensation given or taken back, with who and why.
CREATE FUNCTION webhook_support_actions() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT webhook_events_on() THEN RETURN NULL; END IF;
    INSERT INTO webhook_outbox (type, uid, action_id)
    SELECT CASE kind WHEN 'grant' THEN 'support.granted' ELSE 'support.revoked' END, uid, action_id
    FROM new_actions
    ORDER BY action_id;
    RETURN NULL;
END
$$;
CREATE TRIGGER support_actions_webhook_events AFTER INSERT ON support_actions
    REFERENCING NEW TABLE AS new_actions FOR EACH STATEMENT EXECUTE FUNCTION webhook_support_actions();

-- An event's `data`, rendered when it is sent, from rows that never change. A refund's amount is the
-- purchase's price, or a price learned before the refund's entry (never one learned after it, which
-- would change an event already sent).
CREATE FUNCTION webhook_event_data(e webhook_outbox) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN e.type = 'purchase.recorded' THEN (
            SELECT jsonb_build_object(
                'uid', p.uid, 'transactionId', p.transaction_id, 'originalTransactionId', p.original_transaction_id,
                'store', p.store, 'environment', p.environment, 'book', p.book, 'productId', p.product_id,
                'item', jsonb_build_object('kind', p.item_kind, 'index', p.item_index),
                'ownershipType', p.ownership, 'price', webhook_money(p.price_milli, p.currency),
                'storefront', p.storefront, 'purchaseDate', webhook_time(p.purchased_at), 'entryId', p.entry_id,
                'recordedAt', webhook_time(p.recorded_at))
            FROM purchases p
            WHERE p.transaction_id = e.transaction_id AND p.store = e.store AND p.environment = e.environment)
        WHEN e.type IN ('refund.applied', 'refund.reversed', 'purchase.revoked') THEN (
            SELECT jsonb_build_object(
                'uid', j.uid, 'transactionId', j.transaction_id, 'store', j.store, 'environment', j.environment,
                'book', j.book, 'productId', p.product_id,
                'item', jsonb_build_object('kind', p.item_kind, 'index', p.item_index),
                'amount', CASE WHEN p.price_milli IS NOT NULL THEN webhook_money(p.price_milli, p.currency)
                               WHEN price_entry.seq < j.seq THEN webhook_money(pp.price_milli, pp.currency)
                               ELSE 'null'::jsonb END,
                'refundEventId', j.refund_event_id, 'effectiveDate', webhook_time(j.effective_at),
                'entryId', j.entry_id, 'seq', j.seq)
            FROM journal_entry_rows j
            JOIN purchases p
              ON p.transaction_id = j.transaction_id AND p.store = j.store AND p.environment = j.environment
            LEFT JOIN purchase_prices pp
              ON pp.transaction_id = j.transaction_id AND pp.store = j.store AND pp.environment = j.environment
            LEFT JOIN journal_entry_rows price_entry
              ON price_entry.transaction_id = pp.transaction_id AND price_entry.entry_id = pp.entry_id
            WHERE j.transaction_id = e.transaction_id AND j.entry_id = e.entry_id)
        WHEN e.type = 'price.learned' THEN (
            SELECT jsonb_build_object(
                'uid', p.uid, 'transactionId', n.transaction_id, 'store', n.store, 'environment', n.environment,
                'book', p.book, 'productId', p.product_id,
                'item', jsonb_build_object('kind', p.item_kind, 'index', p.item_index),
                'price', webhook_money(n.price_milli, n.currency), 'storefront', n.storefront,
                'signedDate', webhook_time(n.signed_at), 'entryId', n.entry_id)
            FROM purchase_prices n
            JOIN purchases p
              ON p.transaction_id = n.transaction_id AND p.store = n.store AND p.environment = n.environment
            WHERE n.transaction_id = e.transaction_id AND n.store = e.store AND n.environment = e.environment)
        ELSE (
            SELECT jsonb_build_object(
                'uid', a.uid, 'actionId', a.action_id,
                'item', jsonb_build_object('kind', a.item_kind, 'index', a.item_index), 'revokes', a.revokes,
                'actor', a.actor, 'reason', a.reason, 'transactionId', a.transaction_id,
                'actedAt', webhook_time(a.acted_at))
            FROM support_actions a
            WHERE a.action_id = e.action_id)
    END
$$;
