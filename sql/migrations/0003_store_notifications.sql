-- Store notifications: every App Store Server Notification V2 (and stub notification) the service
-- verified, stored as received before anything is done with it, deduplicated on its
-- notificationUUID. Storing comes first so that the App Store is told 200 only for what is kept.
--
-- A notification that carries a refund, refund reversal or family revoke (`refund_kind`) is then
-- applied to the ledger as the refund event with the same id (refund_events.source_event_id =
-- notification_uuid). One stored but not applied (the process died between the two steps) is
-- applied by the server's sweeper; `shopledger reconcile` lists any that are not.
--
-- Distribution: keyed by notification_uuid; `transaction_id` joins it to the ledger.

CREATE TABLE store_notifications (
    notification_uuid text PRIMARY KEY CHECK (length(notification_uuid) BETWEEN 1 AND 128),
    store text NOT NULL CHECK (store ~ '^[a-z_]{1,32}$'),
    environment text NOT NULL CHECK (environment ~ '^[A-Za-z]{1,32}$'),
    notification_type text NOT NULL CHECK (length(notification_type) BETWEEN 1 AND 64),
    subtype text CHECK (length(subtype) BETWEEN 1 AND 64),
    signed_at timestamptz NOT NULL,
    -- The store transaction it is about, when it names one.
    transaction_id text CHECK (length(transaction_id) BETWEEN 1 AND 128),
    -- What it asks of the ledger; NULL when nothing (TEST, REFUND_DECLINED, CONSUMPTION_REQUEST, ...).
    refund_kind text CHECK (refund_kind IN ('refund', 'refund_reversal', 'family_revoke')),
    revocation_reason integer,
    evidence_sha256 bytea NOT NULL CHECK (length(evidence_sha256) = 32),
    -- Exactly what was posted (the JWS compact string or the stub text).
    signed_payload text NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    CHECK (refund_kind IS NULL OR transaction_id IS NOT NULL)
);
CREATE INDEX store_notifications_with_refunds ON store_notifications (received_at) WHERE refund_kind IS NOT NULL;

CREATE TRIGGER store_notifications_append_only BEFORE UPDATE OR DELETE ON store_notifications
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER store_notifications_no_truncate BEFORE TRUNCATE ON store_notifications
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
