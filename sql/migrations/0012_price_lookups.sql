-- shopledger: additive
-- When to ask the App Store Server API again about a purchase it did not price.
--
-- A sync asks Get Transaction Info for at most a few hundred unpriced purchases per run, oldest
-- recorded first. A purchase Apple does not price (it does not know the transaction, its answer states
-- no price or another purchase, or the call failed) used to be asked again by every run, so a few
-- hundred of them recorded first would have starved every newer unpriced purchase for good.
--
-- One row per purchase asked about and not priced: how many times, what happened last, and the
-- earliest time to ask again (the back-off doubles per attempt, up to a day; the sync computes it).
-- A sync asks purchases never asked first, then the least asked, each only once its time has come.
-- Bookkeeping of the sync, not the ledger: a row is updated in place at each attempt, and a priced
-- purchase leaves its row behind (the sync only looks at purchases still unpriced).
-- Additive (the marker above): a binary from before this migration ignores the table.

CREATE TABLE price_lookups (
    transaction_id ledger_transaction_id NOT NULL,
    store ledger_store NOT NULL,
    environment ledger_environment NOT NULL,
    attempts integer NOT NULL CHECK (attempts > 0),
    last_outcome text NOT NULL CHECK (length(last_outcome) BETWEEN 1 AND 500),
    last_attempt_at timestamptz NOT NULL,
    next_attempt_at timestamptz NOT NULL CHECK (next_attempt_at >= last_attempt_at),
    PRIMARY KEY (transaction_id, store, environment),
    FOREIGN KEY (transaction_id, store, environment) REFERENCES purchases (transaction_id, store, environment)
);
