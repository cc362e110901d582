-- shopledger: additive
-- What the webhook outbox keeps (issue 44): events only while an endpoint could want them, and only
-- for the replay horizon.
--
-- - **No enabled endpoint, no event.** Migration 0016 wrote an outbox row for every purchase whether
--   or not anyone listened, and the outbox is append-only, so with no endpoint it grew with the
--   ledger for ever and every purchase paid for a statement trigger, its transition table, an outbox
--   row (two indexes) and the fan-out's join. Now the four event triggers are enabled only while at
--   least one endpoint is enabled: adding the first endpoint enables them, disabling the last one
--   disables them, in the same transaction (a statement trigger on `webhook_endpoints`, serialized
--   by an advisory lock so two operators changing endpoints at once cannot leave them in the wrong
--   state). A purchase made while no endpoint is enabled writes nothing for webhooks and is not
--   news for an endpoint added later (replays cover events recorded while one was enabled); the
--   ledger itself is unchanged and complete.
-- - **Retention.** Events older than the replay horizon are deleted by `webhook_prune` (the delivery
--   worker runs it; `--webhook-retention`), with their attempts, except events still queued for an
--   endpoint. Nothing else may delete them: the append-only trigger refuses DELETE on the two tables
--   unless the transaction set `shopledger.webhook_prune` (which only `webhook_prune` does) and the
--   row is older than a day. UPDATE and TRUNCATE stay refused.
--
-- Additive: an older build writes and reads the same tables; its endpoint changes run the same
-- trigger.

-- The append-only refusal, with the one exception above (same function, so the ledger's check that
-- every append-only table is guarded by it still holds).
CREATE OR REPLACE FUNCTION ledger_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- Nested IFs: an expression naming OLD.created_at is planned only for the table that has it.
    IF TG_OP = 'DELETE' AND current_setting('shopledger.webhook_prune', true) = 'on' THEN
        IF TG_TABLE_NAME = 'webhook_outbox' THEN
            IF OLD.created_at < now() - interval '1 day' THEN
                RETURN OLD;
            END IF;
        ELSIF TG_TABLE_NAME = 'webhook_attempts' THEN
            IF OLD.recorded_at < now() - interval '1 day' THEN
                RETURN OLD;
            END IF;
        END IF;
    END IF;
    RAISE EXCEPTION 'ledger table % is append-only: % is refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'SL001',
              HINT = 'Corrections are new rows (a new journal entry), never changes to old ones.';
END
$$;

-- Enables the event triggers while an endpoint is enabled, disables them otherwise. SECURITY DEFINER:
-- ALTER TABLE needs the tables' owner (the role that ran the migrations), and the server may run as
-- a role that only reads and writes rows.
CREATE FUNCTION webhook_events_follow_endpoints() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    action text;
BEGIN
    -- One endpoint change at a time decides; each statement then sees the others' committed rows.
    PERFORM pg_advisory_xact_lock(hashtext('shopledger.webhook_events'));
    action := CASE WHEN EXISTS (SELECT 1 FROM webhook_endpoints WHERE enabled) THEN 'ENABLE' ELSE 'DISABLE' END;
    EXECUTE format('ALTER TABLE purchases %s TRIGGER purchases_webhook_events', action);
    EXECUTE format('ALTER TABLE journal_entry_rows %s TRIGGER journal_entry_rows_webhook_events', action);
    EXECUTE format('ALTER TABLE purchase_prices %s TRIGGER purchase_prices_webhook_events', action);
    EXECUTE format('ALTER TABLE support_actions %s TRIGGER support_actions_webhook_events', action);
    RETURN NULL;
END
$$;
CREATE TRIGGER webhook_endpoints_events AFTER INSERT OR DELETE OR UPDATE OF enabled ON webhook_endpoints
    FOR EACH STATEMENT EXECUTE FUNCTION webhook_events_follow_endpoints();

-- Today's endpoints decide the triggers' state now (an UPDATE that changes nothing fires the trigger).
UPDATE webhook_endpoints SET enabled = enabled WHERE false;

-- Deletes up to `batch` events recorded before `now() - keep` that no endpoint still has queued, and
-- up to `batch` attempts recorded before it; returns how many events went. One caller at a time
-- (others get 0 at once). `keep` is at least a day.
CREATE FUNCTION webhook_prune(keep interval, batch integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    pruned bigint;
BEGIN
    IF keep < interval '1 day' THEN
        RAISE EXCEPTION 'webhook events are kept at least a day (asked: %)', keep USING ERRCODE = '22023';
    END IF;
    IF NOT pg_try_advisory_xact_lock(hashtext('shopledger.webhook_prune')) THEN
        RETURN 0;
    END IF;
    PERFORM set_config('shopledger.webhook_prune', 'on', true);
    WITH old AS (
        SELECT o.event_id FROM webhook_outbox o
        WHERE o.created_at < now() - keep
          AND NOT EXISTS (SELECT 1 FROM webhook_pending p WHERE p.event_id = o.event_id)
        ORDER BY o.created_at
        LIMIT batch
    )
    DELETE FROM webhook_outbox o USING old WHERE o.event_id = old.event_id;
    GET DIAGNOSTICS pruned = ROW_COUNT;
    DELETE FROM webhook_attempts a
    WHERE a.attempt_id IN (
        SELECT attempt_id FROM webhook_attempts WHERE recorded_at < now() - keep ORDER BY attempt_id LIMIT batch);
    PERFORM set_config('shopledger.webhook_prune', 'off', true);
    RETURN pruned;
END
$$;
