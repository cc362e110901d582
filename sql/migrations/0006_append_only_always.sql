-- shopledger: additive
-- The append-only refusals fire whatever session_replication_role says. A trigger left at plain
-- ENABLE ("origin") is skipped when a session sets session_replication_role = replica, which a
-- superuser (the private cluster's only role) or a role granted SET on it may do: the ledger would
-- then accept UPDATE and DELETE. ENABLE ALWAYS closes that; `append_only_enforced` requires it.
ALTER TABLE store_transactions ENABLE ALWAYS TRIGGER store_transactions_append_only;
ALTER TABLE store_transactions ENABLE ALWAYS TRIGGER store_transactions_no_truncate;
ALTER TABLE purchases ENABLE ALWAYS TRIGGER purchases_append_only;
ALTER TABLE purchases ENABLE ALWAYS TRIGGER purchases_no_truncate;
ALTER TABLE journal_entries ENABLE ALWAYS TRIGGER journal_entries_append_only;
ALTER TABLE journal_entries ENABLE ALWAYS TRIGGER journal_entries_no_truncate;
ALTER TABLE postings ENABLE ALWAYS TRIGGER postings_append_only;
ALTER TABLE postings ENABLE ALWAYS TRIGGER postings_no_truncate;
ALTER TABLE refund_events ENABLE ALWAYS TRIGGER refund_events_append_only;
ALTER TABLE refund_events ENABLE ALWAYS TRIGGER refund_events_no_truncate;
ALTER TABLE grant_events ENABLE ALWAYS TRIGGER grant_events_append_only;
ALTER TABLE grant_events ENABLE ALWAYS TRIGGER grant_events_no_truncate;
ALTER TABLE store_notifications ENABLE ALWAYS TRIGGER store_notifications_append_only;
ALTER TABLE store_notifications ENABLE ALWAYS TRIGGER store_notifications_no_truncate;
