-- A purchase's state is the kind of its latest journal entry: a refund leaves it `refunded`, a
-- family-sharing revoke `revoked`, a purchase or a refund reversal `live`. One function states the
-- rule, so the store's reads and its refund step cannot drift apart. A SQL-standard body, so the
-- planner inlines it.
CREATE FUNCTION purchase_state_after(entry_kind text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE entry_kind WHEN 'refund' THEN 'refunded' WHEN 'family_revoke' THEN 'revoked' ELSE 'live' END;
