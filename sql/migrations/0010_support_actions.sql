-- Support actions (issue 16): someone holding the admin token grants an item to a user as
-- compensation, or revokes such a grant. Each action is an append-only row that says who (the
-- admin token's label, or the operator named on the command line), when and why (a reason is
-- required). Its change of ownership is a grant event like any other (source 'promotional', cause
-- 'support_grant' or 'support_revoke', entry_id = the action), and the grant row counts the user's
-- live compensations in `promotional_count`. Book `promotional`: owned, never revenue: no journal
-- entry and no posting is written, so no revenue, refund or receivable account ever moves.

CREATE TABLE support_actions (
    action_id bigint PRIMARY KEY DEFAULT nextval('ledger_entry_ids'),
    kind text NOT NULL CHECK (kind IN ('grant', 'revoke')),
    uid text NOT NULL,
    item_kind ledger_item_kind NOT NULL,
    item_index smallint NOT NULL CHECK (item_index > 0),
    -- A revoke names the grant it takes back; a grant is revoked at most once.
    revokes bigint UNIQUE REFERENCES support_actions (action_id),
    actor text NOT NULL CHECK (length(actor) BETWEEN 1 AND 64 AND actor !~ '[[:cntrl:]]'),
    reason text NOT NULL CHECK (length(btrim(reason)) BETWEEN 1 AND 500),
    -- The purchase the compensation is about, when support names one (a lookup then shows it).
    transaction_id ledger_transaction_id,
    acted_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((kind = 'revoke') = (revokes IS NOT NULL))
);
CREATE INDEX support_actions_by_user ON support_actions (uid, acted_at);
CREATE INDEX support_actions_by_transaction ON support_actions (transaction_id) WHERE transaction_id IS NOT NULL;
-- Reports list the period's compensations as grants.
CREATE INDEX support_actions_by_acted_at ON support_actions (acted_at);

CREATE TRIGGER support_actions_append_only BEFORE UPDATE OR DELETE ON support_actions
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER support_actions_no_truncate BEFORE TRUNCATE ON support_actions
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
ALTER TABLE support_actions ENABLE ALWAYS TRIGGER support_actions_append_only;
ALTER TABLE support_actions ENABLE ALWAYS TRIGGER support_actions_no_truncate;

-- Grant events: a new source and two new causes. A promotional event names no store transaction.
ALTER TABLE grant_event_rows
    DROP CONSTRAINT grant_events_source_check, DROP CONSTRAINT grant_events_cause_check,
    DROP CONSTRAINT grant_events_check, DROP CONSTRAINT grant_events_check1,
    ADD CONSTRAINT grant_event_rows_source_check
        CHECK (source IN ('free', 'purchased', 'family_shared', 'promotional')),
    ADD CONSTRAINT grant_event_rows_cause_in_check CHECK (cause IN (
        'register', 'purchase', 'refund', 'refund_reversal', 'family_revoke', 'support_grant', 'support_revoke')),
    ADD CONSTRAINT grant_event_rows_transaction_check
        CHECK ((source IN ('free', 'promotional')) = (transaction_id IS NULL)),
    ADD CONSTRAINT grant_event_rows_free_check CHECK ((source = 'free') = (cause = 'register')),
    ADD CONSTRAINT grant_event_rows_promotional_check
        CHECK ((source = 'promotional') = (cause IN ('support_grant', 'support_revoke')));

-- Grants: live compensations count towards owning the item. `owned` is generated, so it is
-- dropped and added again with the new term (the table is current state, not history). The new
-- bound joins 0007's one CHECK of the counts rather than adding a second CHECK that every
-- purchase's grant upsert would evaluate.
ALTER TABLE grants
    DROP COLUMN owned,
    ADD COLUMN promotional_count integer NOT NULL DEFAULT 0,
    ADD COLUMN owned boolean GENERATED ALWAYS AS (
        free OR purchased_count > 0 OR shared_count > 0 OR promotional_count > 0) STORED,
    DROP CONSTRAINT grants_check1,
    ADD CONSTRAINT grants_counts_check
        CHECK (item_index >= 0 AND purchased_count >= 0 AND shared_count >= 0 AND promotional_count >= 0);
