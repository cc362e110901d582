import Foundation
import Postgres
import Receipts

/// What the App Store sync (`serve`'s periodic run, `shopledger appstore sync`) leaves in the database.
/// Its runs themselves are not recorded there (each run is logged, and counted in `/metrics`); what is
/// recorded is what it did and what it still has to do: prices it learned (`purchase_prices`), purchases
/// Apple has not priced yet and when it asks again (`price_lookups`, migration 0012), and the
/// notifications stored (by Apple's delivery or by a sync).
public struct AppleSyncRecords: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    public struct Summary: Sendable, Hashable {
        /// App Store purchases bought, recorded without a price, none learned yet: what a sync asks Apple
        /// to price (as `LedgerStore.unpricedPurchases` selects them).
        public var unpriced: Int
        /// Of those, asked at least once without an answer that priced them.
        public var askedUnpriced: Int
        public var lastLookupAt: Date?
        /// The earliest time a sync asks again about one of them.
        public var nextLookupAt: Date?
        public var pricesLearned: Int
        public var lastPriceLearnedAt: Date?
        public var notifications: Int
        public var lastNotificationAt: Date?
    }

    /// A purchase the sync asked Apple about and that is still unpriced.
    public struct Lookup: Sendable, Hashable {
        public var transactionId: String
        public var environment: String
        public var attempts: Int
        public var lastOutcome: String
        public var lastAttemptAt: Date
        public var nextAttemptAt: Date
    }

    static let appStore = VerifiedTransaction.Store.appStore.rawValue

    public func summary() async throws -> Summary {
        let row = try await client.query(
            """
            WITH unpriced AS (
                SELECT p.transaction_id, p.store, p.environment FROM purchases p
                WHERE p.price_milli IS NULL AND p.ownership = 'PURCHASED' AND p.store = \(Self.appStore)::text
                  AND NOT EXISTS (SELECT 1 FROM purchase_prices l
                                  WHERE l.transaction_id = p.transaction_id AND l.store = p.store
                                    AND l.environment = p.environment)
            ),
            asked AS (
                SELECT k.* FROM price_lookups k JOIN unpriced u USING (transaction_id, store, environment)
            )
            SELECT (SELECT count(*) FROM unpriced), (SELECT count(*) FROM asked),
                   (SELECT max(last_attempt_at) FROM asked), (SELECT min(next_attempt_at) FROM asked),
                   (SELECT count(*) FROM purchase_prices), (SELECT max(recorded_at) FROM purchase_prices),
                   (SELECT count(*) FROM store_notifications WHERE store = \(Self.appStore)::text),
                   (SELECT max(received_at) FROM store_notifications WHERE store = \(Self.appStore)::text)
            """
        ).single()
        let (unpriced, asked, lastLookup, nextLookup) = try row.decode((Int, Int, Date?, Date?).self)
        return Summary(
            unpriced: unpriced, askedUnpriced: asked, lastLookupAt: lastLookup, nextLookupAt: nextLookup,
            pricesLearned: try row.decode(Int.self, at: 4), lastPriceLearnedAt: try row.decode(Date?.self, at: 5),
            notifications: try row.decode(Int.self, at: 6), lastNotificationAt: try row.decode(Date?.self, at: 7))
    }

    /// The still-unpriced purchases asked about most recently, newest first, at most `limit`.
    public func recentLookups(limit: Int = 20) async throws -> [Lookup] {
        try await client.query(
            """
            SELECT k.transaction_id::text, k.environment::text, k.attempts, k.last_outcome, k.last_attempt_at,
                   k.next_attempt_at
            FROM price_lookups k
            WHERE NOT EXISTS (SELECT 1 FROM purchase_prices l
                              WHERE l.transaction_id = k.transaction_id AND l.store = k.store
                                AND l.environment = k.environment)
            ORDER BY k.last_attempt_at DESC LIMIT \(max(1, min(limit, 500)))
            """
        ).map { row in
            let (id, environment, attempts, outcome, last, next) = try row.decode(
                (String, String, Int, String, Date, Date).self)
            return Lookup(
                transactionId: id, environment: environment, attempts: attempts, lastOutcome: outcome,
                lastAttemptAt: last, nextAttemptAt: next)
        }
    }
}
