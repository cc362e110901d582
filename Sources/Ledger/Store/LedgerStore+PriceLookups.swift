import Foundation
import Postgres
import Receipts

/// A purchase recorded without a price (see `LedgerStore.unpricedPurchases(limit:dueAt:)`, and
/// `unpricedGooglePlayPurchases(limit:dueAt:)` for Google Play's).
public struct UnpricedPurchase: Sendable, Hashable {
    public var store: VerifiedTransaction.Store
    public var environment: StoreEnvironment
    public var transactionId: String

    public init(store: VerifiedTransaction.Store = .appStore, environment: StoreEnvironment, transactionId: String) {
        self.store = store
        self.environment = environment
        self.transactionId = transactionId
    }
}

/// When a sync asks Apple again about a purchase it did not price (migration 0012).
public enum PriceLookupBackoff {
    /// The wait after the first attempt that did not price the purchase; it doubles with each further
    /// attempt, up to ``longest``.
    public static let first: TimeInterval = 15 * 60
    public static let longest: TimeInterval = 24 * 3_600
}

extension LedgerStore {
    /// Which of the App Store transactions `transactionIds` of `environment` the ledger holds with a
    /// price, its own or one learned later: those a purchase request need not ask Apple to price.
    ///
    /// - Throws: `LedgerError.invalidInput` for an id that is not one, or `PostgresError`.
    public func pricedTransactions(
        _ transactionIds: [String], in environment: StoreEnvironment
    ) async throws
        -> Set<String>
    {
        for id in transactionIds { try Validation.identifier(id, what: "transactionId") }
        guard !transactionIds.isEmpty else { return [] }
        let rows = try await client.query(
            """
            SELECT p.transaction_id::text
            FROM purchases p
            WHERE p.store = \(VerifiedTransaction.Store.appStore.rawValue)::text
              AND p.environment = \(environment.rawValue)::text
              AND p.transaction_id = ANY(\(TextArray(transactionIds))::text[])
              AND (p.price_milli IS NOT NULL
                   OR EXISTS (SELECT 1 FROM purchase_prices l
                              WHERE l.transaction_id = p.transaction_id AND l.store = p.store
                                AND l.environment = p.environment))
            """)
        return Set(try rows.map { try $0.decode(String.self, at: 0) })
    }

    /// App Store purchases bought (not family-shared) and recorded without a price that none has been
    /// learned for yet, at most `limit`: what a sync asks Apple to price. Purchases never asked come
    /// first, then the least asked, oldest recorded first among equals, so purchases Apple does not
    /// price cannot starve newer ones. With `dueAt`, only purchases whose back-off has run out by then
    /// (`price_lookups.next_attempt_at`); without, every one.
    public func unpricedPurchases(limit: Int, dueAt: Date? = nil) async throws -> [UnpricedPurchase] {
        try await client.query(
            """
            SELECT p.environment::text, p.transaction_id::text
            FROM purchases p
            LEFT JOIN price_lookups k
                ON k.transaction_id = p.transaction_id AND k.store = p.store AND k.environment = p.environment
            WHERE p.price_milli IS NULL AND p.ownership = 'PURCHASED'
              AND p.store = \(VerifiedTransaction.Store.appStore.rawValue)::text
              AND NOT EXISTS (SELECT 1 FROM purchase_prices l
                              WHERE l.transaction_id = p.transaction_id AND l.store = p.store
                                AND l.environment = p.environment)
              AND (\(dueAt)::timestamptz IS NULL OR k.next_attempt_at IS NULL OR k.next_attempt_at <= \(dueAt))
            ORDER BY coalesce(k.attempts, 0), p.recorded_at, p.transaction_id
            LIMIT \(max(0, limit))
            """
        ).map { row in
            let (environment, transactionId) = try row.decode((String, String).self)
            return UnpricedPurchase(environment: StoreEnvironment(rawValue: environment), transactionId: transactionId)
        }
    }

    /// Notes that asking the store (Apple, or Google's Orders API) at `time` did not price `purchase` (`outcome` says why, for operators):
    /// one more attempt, and the next no earlier than ``PriceLookupBackoff`` says. Returns that time.
    @discardableResult
    public func recordPriceLookupFailure(
        _ purchase: UnpricedPurchase, outcome: String, at time: Date
    ) async throws -> Date {
        try Validation.identifier(purchase.transactionId, what: "transactionId")
        let outcome = String(outcome.prefix(500)).isEmpty ? "unknown" : String(outcome.prefix(500))
        // The wait doubles per attempt; the count is only known inside the upsert, so it is computed there.
        let rows = try await client.query(
            """
            INSERT INTO price_lookups AS k
                (transaction_id, store, environment, attempts, last_outcome, last_attempt_at, next_attempt_at)
            VALUES (\(purchase.transactionId), \(purchase.store.rawValue),
                    \(purchase.environment.rawValue), 1, \(outcome), \(time),
                    \(time)::timestamptz + make_interval(secs => \(PriceLookupBackoff.first)))
            ON CONFLICT (transaction_id, store, environment) DO UPDATE
            SET attempts = k.attempts + 1, last_outcome = EXCLUDED.last_outcome,
                last_attempt_at = EXCLUDED.last_attempt_at,
                next_attempt_at = EXCLUDED.last_attempt_at + make_interval(secs => least(
                    \(PriceLookupBackoff.first) * power(2, least(k.attempts, 16)), \(PriceLookupBackoff.longest)))
            RETURNING next_attempt_at
            """)
        return try rows.single().decode(Date.self, at: 0)
    }
}
