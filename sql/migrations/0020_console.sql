-- shopledger: additive
-- The operators' console (issue 42; docs/console.md): people who sign in with a name and a password,
-- each with one role, their sessions, and a record of every sign-in and every action.
--
-- Additive: new tables and one index that older builds do not read.

-- An operator: a person with a role. The password is stored only as a slow, salted scrypt hash
-- (`scrypt$<log2 N>$<r>$<p>$<salt>$<hash>`, base64). Disabling keeps the row: the audit names them.
CREATE TABLE console_operators (
    operator_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    role text NOT NULL CHECK (role IN ('support', 'finance', 'admin')),
    password_hash text NOT NULL CHECK (password_hash LIKE 'scrypt$%'),
    created_at timestamptz NOT NULL DEFAULT now(),
    password_changed_at timestamptz NOT NULL DEFAULT now(),
    disabled_at timestamptz
);

-- A signed-in browser. The cookie carries a random token; only its SHA-256 is stored, so a copy of
-- the database opens no session. Several servers share these rows. A session ends when the operator
-- signs out, is disabled or gets a new password, when it has been idle too long, or when it is too old
-- (the server compares `last_seen_at` and `created_at` with its settings).
CREATE TABLE console_sessions (
    token_sha256 bytea PRIMARY KEY CHECK (length(token_sha256) = 32),
    operator_id bigint NOT NULL REFERENCES console_operators (operator_id),
    -- The token every form of the session carries (checked on every POST).
    csrf_token text NOT NULL CHECK (length(csrf_token) BETWEEN 32 AND 128),
    created_at timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    ended_at timestamptz,
    address text
);
CREATE INDEX console_sessions_by_operator ON console_sessions (operator_id) WHERE ended_at IS NULL;

-- Every sign-in attempt and every action, with the operator's name as typed or signed in. Append-only
-- like the ledger. Sign-in attempts are reservations: `login_attempt` is written (under a short
-- advisory lock) before the password is checked, and `login_ok` names the attempt it settles; the
-- limits count the attempts in the window that no `login_ok` settled.
CREATE TABLE console_events (
    event_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at timestamptz NOT NULL,
    action text NOT NULL CHECK (action ~ '^[a-z_]{1,40}$'),
    operator text NOT NULL CHECK (length(operator) BETWEEN 1 AND 200),
    address text,
    -- What the action was about (a uid, a grant id, a catalog item, a webhook endpoint).
    target text CHECK (length(target) <= 200),
    detail text CHECK (length(detail) <= 2000),
    -- For `login_ok` and `login_failed`: the `login_attempt` they settle.
    attempt_id bigint REFERENCES console_events (event_id)
);
CREATE INDEX console_events_attempts_by_operator ON console_events (operator, at) WHERE action = 'login_attempt';
CREATE INDEX console_events_attempts_by_address ON console_events (address, at) WHERE action = 'login_attempt';
CREATE UNIQUE INDEX console_events_settled ON console_events (attempt_id) WHERE attempt_id IS NOT NULL;
CREATE INDEX console_events_by_at ON console_events (at);

CREATE TRIGGER console_events_append_only BEFORE UPDATE OR DELETE ON console_events
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER console_events_no_truncate BEFORE TRUNCATE ON console_events
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
ALTER TABLE console_events ENABLE ALWAYS TRIGGER console_events_append_only;
ALTER TABLE console_events ENABLE ALWAYS TRIGGER console_events_no_truncate;

-- The customer page lists the webhook events about a user.
CREATE INDEX webhook_outbox_by_user ON webhook_outbox (uid, event_id);
