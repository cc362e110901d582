import Postgres

extension LedgerStore {
    /// Refuses a transaction whose `appAccountToken` differs from the user's known token.
    ///
    /// The ledger keeps no token per user; what it knows is the tokens of the user's recorded
    /// purchases, so "the user's known token" is any token those carry. A transaction without a
    /// token, or a user whose purchases carry none, has nothing to compare and passes. Two first
    /// purchases of one user with different tokens posted at the same instant can both pass (the
    /// check is a read before the insert); after that the rule holds.
    func refuseAccountTokenMismatch(_ input: PurchaseInput) async throws {
        guard let token = input.appAccountToken else { return }
        let mismatched =
            try await client.query(
                """
                SELECT 1 FROM purchases
                WHERE uid = \(input.uid)::text AND app_account_token IS NOT NULL AND app_account_token <> \(token)::uuid
                LIMIT 1
                """
            ).count > 0
        if mismatched {
            throw LedgerError(
                .accountTokenMismatch, "the transaction's appAccountToken is not the one this user's purchases carry")
        }
    }
}
