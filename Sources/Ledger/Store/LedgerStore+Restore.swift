import Foundation
import Postgres
import Receipts

/// What a user already has that ties them to a customer's App Store history: the only grounds on
/// which a restore that names a bare transaction id (no proof from the device) is let through.
public struct RestoreStanding: Sendable, Hashable {
    /// The user owns (has recorded) one of the transactions asked about.
    public var ownsOneOfThem: Bool
    /// The user has at least one App Store purchase recorded, in any environment.
    public var ownsAnyAppStorePurchase: Bool
    /// The user's appAccountToken (set by their first in-app purchase carrying one), if any.
    public var accountToken: UUID?

    public init(ownsOneOfThem: Bool, ownsAnyAppStorePurchase: Bool, accountToken: UUID?) {
        self.ownsOneOfThem = ownsOneOfThem
        self.ownsAnyAppStorePurchase = ownsAnyAppStorePurchase
        self.accountToken = accountToken
    }

    /// Whether anything of the user's could ever match a history: without a purchase or a token, no
    /// history can be theirs by these rules, and Apple need not be asked.
    public var couldOwnAHistory: Bool { ownsAnyAppStorePurchase || accountToken != nil }
}

extension LedgerStore {
    /// `uid`'s standing towards the App Store transactions `transactionIds` of `environment` (one read).
    ///
    /// - Throws: `LedgerError.userNotRegistered`, `LedgerError.invalidInput` for an id that is not one,
    ///   or `PostgresError`.
    public func restoreStanding(
        of uid: String, environment: StoreEnvironment, transactionIds: [String]
    ) async throws -> RestoreStanding {
        try Validation.uid(uid)
        for id in transactionIds { try Validation.identifier(id, what: "transactionId") }
        let appStore = VerifiedTransaction.Store.appStore.rawValue
        let rows = try await client.query(
            """
            SELECT u.app_account_token,
                   EXISTS (SELECT 1 FROM purchases p
                           WHERE p.uid = u.uid AND p.store = \(appStore)::text
                             AND p.environment = \(environment.rawValue)::text
                             AND p.transaction_id = ANY(\(TextArray(transactionIds))::text[])) AS owns_one,
                   EXISTS (SELECT 1 FROM purchases p WHERE p.uid = u.uid AND p.store = \(appStore)::text) AS owns_any
            FROM users u WHERE u.uid = \(uid)::text
            """)
        guard let row = rows.first else { throw LedgerError.userNotRegistered(uid) }
        let (token, ownsOne, ownsAny) = try row.decode((UUID?, Bool, Bool).self)
        return RestoreStanding(ownsOneOfThem: ownsOne, ownsAnyAppStorePurchase: ownsAny, accountToken: token)
    }
}
