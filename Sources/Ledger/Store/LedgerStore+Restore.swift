import Foundation
import Postgres
import Receipts

/// What a user already has that ties them to a customer's App Store history: the only grounds on
/// which a restore that names a bare transaction id (no proof from the device) is let through.
///
/// Only a verified purchase the user owns counts. An appAccountToken does not: the app chooses it (a
/// StoreKit purchase option), two users may carry the same one, and it travels in the clear inside
/// every transaction. A user who made one free Sandbox purchase with another user's token was given
/// that user's production history by it.
public struct RestoreStanding: Sendable, Hashable {
    /// The user owns (has recorded) one of the transactions asked about, in their environment.
    public var ownsOneOfThem: Bool
    /// The user has at least one App Store purchase recorded, in any environment.
    public var ownsAnyAppStorePurchase: Bool

    public init(ownsOneOfThem: Bool, ownsAnyAppStorePurchase: Bool) {
        self.ownsOneOfThem = ownsOneOfThem
        self.ownsAnyAppStorePurchase = ownsAnyAppStorePurchase
    }

    /// Whether any history could be the user's: without an App Store purchase none can, and Apple need
    /// not be asked.
    public var couldOwnAHistory: Bool { ownsAnyAppStorePurchase }
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
            SELECT EXISTS (SELECT 1 FROM purchases p
                           WHERE p.uid = u.uid AND p.store = \(appStore)::text
                             AND p.environment = \(environment.rawValue)::text
                             AND p.transaction_id = ANY(\(TextArray(transactionIds))::text[])) AS owns_one,
                   EXISTS (SELECT 1 FROM purchases p WHERE p.uid = u.uid AND p.store = \(appStore)::text) AS owns_any
            FROM users u WHERE u.uid = \(uid)::text
            """)
        guard let row = rows.first else { throw LedgerError.userNotRegistered(uid) }
        let (ownsOne, ownsAny) = try row.decode((Bool, Bool).self)
        return RestoreStanding(ownsOneOfThem: ownsOne, ownsAnyAppStorePurchase: ownsAny)
    }
}
