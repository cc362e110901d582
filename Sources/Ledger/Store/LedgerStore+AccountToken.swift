import Postgres

/// One appAccountToken per user (migration 0009), checked and set inside the purchase statements
/// (`PurchaseStatement`, one purchase or a group commit batch), so it costs no round trip of its own
/// and reads one row: the user's, which the statements read anyway.
///
/// - A purchase whose token is not its user's is not inserted; the statement answers
///   `token_accepted` false and the ledger throws `account_token_mismatch` (nothing written). A
///   purchase without a token, or by a user who has none yet, passes.
/// - The first recorded purchase that carries a token sets the user's token, in the same statement,
///   unless it is recorded without claiming one (`claimingAccountToken: false`: a restore, whose
///   history comes from Apple rather than from the app signed in as this user),
///   by an UPDATE of the user's row. PostgreSQL re-checks that row under its lock, so when two first
///   purchases with different tokens race, the later one finds the token set, claims nothing, and
///   its statement fails (`ledger_account_token_taken`, SQLSTATE SLTOK): rolled back, it wrote
///   nothing, and the ledger answers `account_token_mismatch` again. A purchase that is not
///   inserted (duplicate, another user's transaction) sets no token.
extension LedgerStore {
    /// The purchase statements' CTEs after `account` (the user's row: `uid`, `known_token`) and
    /// `purchase` (the inserted rows): `claim`, the users whose token this statement set. Users are
    /// claimed in uid order, the first claiming purchase (by transaction id) of a user giving the token;
    /// `input.claims_token` says which purchases claim.
    static let claimAccountTokens = """
        claimable AS (
            SELECT DISTINCT ON (p.uid) p.uid, p.app_account_token
            FROM purchase p JOIN account a ON a.uid = p.uid
            JOIN input i ON i.transaction_id = p.transaction_id AND i.store = p.store AND i.environment = p.environment
            WHERE p.app_account_token IS NOT NULL AND a.known_token IS NULL AND i.claims_token
            ORDER BY p.uid, p.transaction_id
        ),
        claim AS (
            UPDATE users u SET app_account_token = c.app_account_token
            FROM claimable c
            WHERE u.uid = c.uid AND (u.app_account_token IS NULL OR u.app_account_token = c.app_account_token)
            RETURNING u.uid, u.app_account_token
        )
        """

    /// A result column of the purchase statements, NULL unless a claiming purchase they inserted
    /// carries a token its user does not have now (another statement set another one first): then it
    /// fails the statement. Reading `claim` here runs it before the grants' upsert, so every purchase
    /// statement locks the user's row before grant rows.
    static let refuseLostAccountTokenRace = """
        CASE WHEN EXISTS (
            SELECT 1 FROM purchase p JOIN account a ON a.uid = p.uid
            JOIN input i ON i.transaction_id = p.transaction_id AND i.store = p.store AND i.environment = p.environment
            WHERE p.app_account_token IS NOT NULL AND a.known_token IS NULL AND i.claims_token
              AND p.app_account_token IS DISTINCT FROM (SELECT c.app_account_token FROM claim c WHERE c.uid = p.uid)
        ) THEN ledger_account_token_taken() END
        """
}

extension LedgerError {
    static func accountTokenMismatch() -> LedgerError {
        LedgerError(
            .accountTokenMismatch, "the transaction's appAccountToken is not the one this user's purchases carry")
    }
}

extension SQLState {
    /// Raised by `ledger_account_token_taken()` (migration 0009).
    static let accountTokenTaken = SQLState("SLTOK")
}
