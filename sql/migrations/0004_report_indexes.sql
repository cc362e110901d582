-- Reports: indexes that let a report read only the rows of its period, so its cost grows with the
-- period's activity, not with the ledger's history.

-- A period's purchases, read in time order straight from the table (a purchase's journal entry
-- takes effect when it was bought, so no journal lookup is needed for them).
CREATE INDEX purchases_by_purchased_at ON purchases (purchased_at);

-- A period's refunds, reversals and family revokes: the few journal entries that are not purchases.
CREATE INDEX journal_entries_changes_by_effective_at ON journal_entries (effective_at) WHERE kind <> 'purchase';

-- Every journal entry of a period, for the report's reconciliation against the postings.
CREATE INDEX journal_entries_by_effective_at ON journal_entries (effective_at);

-- The "data as of" watermark: the newest entry recorded, one step down this index.
CREATE INDEX journal_entries_by_recorded_at ON journal_entries (recorded_at);

-- First-time buyers: "did this user buy anything (priced, for themselves, in this book) before
-- the period?" is one index-only probe per buyer.
CREATE INDEX purchases_paid_by_user ON purchases (uid, book, purchased_at)
    WHERE ownership = 'PURCHASED' AND currency IS NOT NULL;
