-- One appAccountToken per user, checked inside the purchase statement.
--
-- Before this, the ledger kept no token per user: a purchase carrying an appAccountToken was checked
-- against the tokens of all the user's recorded purchases by a separate query sent first
-- (`... WHERE uid = $1 AND app_account_token <> $2 LIMIT 1`). It cost a round trip per purchase and,
-- when the tokens matched, visited every purchase of the user (LedgerBench: 860–1,090 µs of
-- PostgreSQL CPU per purchase against ~170 µs for the purchase statement itself); and two first
-- purchases of one user with different tokens at the same instant could both pass, since the check
-- was a read before the insert.
--
-- Now the user's row carries the token. The purchase statement reads it where it already reads the
-- user (one primary-key probe, no extra round trip): a token other than the user's is not inserted.
-- The first recorded purchase that carries a token sets it, in the same statement, by an UPDATE of
-- the user's row; PostgreSQL re-checks the row under its lock, so of two first purchases with
-- different tokens racing, the second finds the token set and its statement fails with SQLSTATE
-- SLTOK (`ledger_account_token_taken`), rolling it back: nothing is written and the ledger answers
-- `account_token_mismatch`. A refused purchase (a duplicate, another user's transaction, an unknown
-- product) sets nothing. Once set, the token never changes (a trigger refuses it, as the append-only
-- tables refuse changes).
--
-- Existing users get the token of their first recorded purchase that carries one. A user whose
-- purchases carry several tokens (the race above, or purchases recorded before the check existed)
-- was refused every tokened purchase by the old check; from now on the first token is theirs and
-- the others are refused. How many such users there were is reported as a NOTICE.
--
-- Not additive: a server built before this would record tokened purchases without setting the
-- user's token, and the check would no longer see them.

ALTER TABLE users ADD COLUMN app_account_token uuid;

UPDATE users u SET app_account_token = first.app_account_token
FROM (
    SELECT DISTINCT ON (uid) uid, app_account_token
    FROM purchases
    WHERE app_account_token IS NOT NULL
    ORDER BY uid, recorded_at, entry_id
) AS first
WHERE u.uid = first.uid;

DO $$
DECLARE
    several bigint;
BEGIN
    SELECT count(*) INTO several FROM (
        SELECT uid FROM purchases WHERE app_account_token IS NOT NULL
        GROUP BY uid HAVING count(DISTINCT app_account_token) > 1
    ) s;
    IF several > 0 THEN
        RAISE NOTICE 'migration 0009: % users have purchases with several appAccountTokens; each keeps its first', several;
    END IF;
END
$$;

-- Once set, a user's token is never changed or removed.
CREATE FUNCTION ledger_refuse_account_token_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the appAccountToken of user % is set once and never changed', OLD.uid
        USING ERRCODE = 'SL001';
END
$$;
CREATE TRIGGER users_account_token_once BEFORE UPDATE OF app_account_token ON users
    FOR EACH ROW
    WHEN (OLD.app_account_token IS NOT NULL AND NEW.app_account_token IS DISTINCT FROM OLD.app_account_token)
    EXECUTE FUNCTION ledger_refuse_account_token_change();
ALTER TABLE users ENABLE ALWAYS TRIGGER users_account_token_once;

-- Called by the purchase statements only when a first purchase lost the race for the user's token:
-- fails the statement, so the purchase it inserted is rolled back.
CREATE FUNCTION ledger_account_token_taken() RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'another appAccountToken was set for this user at the same time'
        USING ERRCODE = 'SLTOK';
END
$$;
