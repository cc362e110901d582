-- Reports: indexes that let a report read only the rows of its period, so its cost grows with the
-- period's activity, not with the ledger's history.

-- Every report query selects journal entries by when they took effect (a purchase's date, the
-- date the store processed a refund), as an index range scan on this.
CREATE INDEX journal_entries_by_effective_at ON journal_entries (effective_at);

-- The "data as of" watermark: the newest entry recorded, one step down this index.
CREATE INDEX journal_entries_by_recorded_at ON journal_entries (recorded_at);

-- First-time buyers: "did this user buy anything (priced, for themselves, in this book) before
-- the period?" is one index-only probe per buyer.
CREATE INDEX purchases_paid_by_user ON purchases (uid, book, purchased_at)
    WHERE ownership = 'PURCHASED' AND currency IS NOT NULL;
