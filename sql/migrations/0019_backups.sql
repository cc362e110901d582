-- shopledger: additive
-- The backups pgBackRest took of this database (issue 41, "backups as a service"; docs/operations.md,
-- "Backups and the restore drill").
--
-- The backup job (deploy/pgbackrest/shopledger-backup@.service) runs `shopledger backups record` after
-- each `pgbackrest backup`: it reads `pgbackrest info --output=json` and adds a row for each backup the
-- repository lists for this cluster (same system identifier) without an error, once per label. Every
-- server reads the newest `stopped_at` and exports it as `shop_backup_last_success_timestamp_seconds`,
-- so a backup that did not happen, failed, or was never recorded shows on /metrics of the app servers,
-- which need no pgBackRest and no access to the repository.
--
-- Append-only like the ledger: a backup that happened stays recorded (the repository may expire it;
-- the row says it was taken). UPDATE, DELETE and TRUNCATE are refused by trigger, enabled ALWAYS.
--
-- Additive: a new table that older builds do not read.

CREATE TABLE backups (
    stanza text NOT NULL CHECK (length(stanza) BETWEEN 1 AND 100),
    -- pgBackRest's label: `20261129-033001F`, `20261130-033002F_20261130-033002D`.
    label text NOT NULL CHECK (length(label) BETWEEN 1 AND 100),
    type text NOT NULL CHECK (type IN ('full', 'diff', 'incr')),
    started_at timestamptz NOT NULL,
    stopped_at timestamptz NOT NULL CHECK (stopped_at >= started_at),
    -- The cluster's size, and what the backup took in the repository (after compression; a diff or
    -- incr only what changed).
    database_bytes bigint NOT NULL CHECK (database_bytes >= 0),
    repository_bytes bigint NOT NULL CHECK (repository_bytes >= 0),
    -- The WAL the backup needs to be consistent: from its start to its stop segment.
    wal_start text NOT NULL,
    wal_stop text NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stanza, label)
);
-- The newest backup: one step down this index (servers read it every minute).
CREATE INDEX backups_by_stopped_at ON backups (stopped_at);

CREATE TRIGGER backups_append_only BEFORE UPDATE OR DELETE ON backups
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER backups_no_truncate BEFORE TRUNCATE ON backups
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
ALTER TABLE backups ENABLE ALWAYS TRIGGER backups_append_only;
ALTER TABLE backups ENABLE ALWAYS TRIGGER backups_no_truncate;
