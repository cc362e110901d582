import Foundation
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Ledger

/// Runs `body` with a ledger on a database of its own, then checks every ledger invariant.
func withLedger<R: Sendable>(
    _ label: String = #function,
    maximumConnections: Int = 8,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (TestDatabase, LedgerStore) async throws -> R
) async throws -> R {
    try await TestGate.ledger.run {
        try await withTestDatabase(label, maximumConnections: maximumConnections) { db in
            let ledger = LedgerStore(client: db.client)
            let result = try await body(db, ledger)
            try await expectInvariants(db.client, sourceLocation: sourceLocation)
            return result
        }
    }
}

/// Runs the reconciler and records a test issue naming every failed check.
func expectInvariants(_ client: PostgresClient, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let report = try await Reconciler(client: client).run()
    if !report.passed {
        Issue.record("ledger invariants failed:\n\(report.text)", sourceLocation: sourceLocation)
    }
}

/// One integer from a query (counts, sums).
func scalar(_ client: PostgresClient, _ query: PostgresQuery) async throws -> Int {
    try await client.query(query).single().decode(Int?.self, at: 0) ?? 0
}

/// Waits until `count` sessions on this test's database wait for a lock (a row another transaction
/// holds): the state a test stages, polled, instead of a sleep that hopes it was reached. The bound is
/// for a broken test, not a time the test measures.
func waitForLockWaiters(
    _ db: TestDatabase, _ count: Int, sourceLocation: SourceLocation = #_sourceLocation
)
    async throws
{
    try await waitUntil("\(count) sessions waiting on a lock", sourceLocation: sourceLocation) {
        try await scalar(
            db.client,
            """
            SELECT count(*) FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'
            """) >= count
    }
}

/// Polls `condition` until it holds; records an issue and throws after 60 s (a bound for a broken
/// test, not a time it measures).
func waitUntil(
    _ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + .seconds(60)
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("not within 60 s: \(what)", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// Another transaction holding a row until the test releases it: `INSERT`s with `sql`, then waits.
struct HeldTransaction: Sendable {
    private let task: Task<Void, any Error>
    private let release: AsyncStream<Void>.Continuation

    /// Returns once the row is inserted (and held).
    init(_ db: TestDatabase, _ sql: PostgresQuery) async throws {
        let (inserted, insertedSignal) = AsyncStream<Void>.makeStream()
        let (released, release) = AsyncStream<Void>.makeStream()
        self.release = release
        task = Task {
            // A failed INSERT ends the wait below too; `commit` then throws its error.
            defer { insertedSignal.finish() }
            try await db.client.withTransaction { connection in
                _ = try await connection.query(sql)
                insertedSignal.yield()
                for await _ in released { break }
            }
        }
        for await _ in inserted { break }
    }

    /// Commits the holder's transaction and waits for it.
    func commit() async throws {
        release.yield()
        release.finish()
        try await task.value
    }
}

/// Account balances (non-zero), as `[account: milli]` for one currency.
func balances(_ client: PostgresClient, currency: String = "KRW") async throws -> [String: Int] {
    let rows = try await client.query(
        """
        SELECT account, sum(amount_milli) FROM postings WHERE currency = \(currency)::text
        GROUP BY account HAVING sum(amount_milli) <> 0
        """)
    var result: [String: Int] = [:]
    for row in rows {
        let (account, amount) = try row.decode((String, Int).self)
        result[account] = amount
    }
    return result
}

let testProfile = try! UserProfile(json: #"{"nick":"새싹","gender":1,"email":"a@example.com"}"#)

/// The catalog's KRW price of a paid item, in milli.
func catalogPrice(_ item: ItemID) -> Int64 {
    switch item.kind {
    case .face: item.index == 1 ? 1_200_000 : 2_500_000
    case .background: item.index <= 3 ? 1_200_000 : 2_500_000
    }
}

/// A verified transaction, as the Receipts module would hand it over.
func makeTransaction(
    _ transactionId: String,
    item: ItemID = .face(1),
    store: VerifiedTransaction.Store = .appStore,
    environment: StoreEnvironment = .production,
    price: Int64? = nil,
    unpriced: Bool = false,
    currency: String = "KRW",
    ownership: OwnershipType = .purchased,
    evidence: String = "v1",
    productId explicitProductId: String? = nil,
    token: UUID? = nil
) -> VerifiedTransaction {
    let priceMilli: Int64? = unpriced ? nil : (price ?? catalogPrice(item))
    let date = Date(timeIntervalSince1970: 1_760_000_000)
    return VerifiedTransaction(
        store: store, environment: environment, transactionId: transactionId, originalTransactionId: transactionId,
        bundleId: "com.memolease.sesac1", productId: explicitProductId ?? productId(item), productType: .nonConsumable,
        purchaseDate: date, originalPurchaseDate: date, signedDate: date.addingTimeInterval(5),
        priceMilli: priceMilli, currency: priceMilli == nil ? nil : currency, storefront: "KOR",
        ownershipType: ownership, appAccountToken: token,
        evidenceSHA256: fakeDigest("\(store)/\(environment)/\(transactionId)/\(evidence)"))
}

/// A refund event for a transaction, signed at `second` seconds after the test epoch.
func makeRefundEvent(
    _ eventId: String, _ kind: RefundEvent.Kind, for transactionId: String,
    environment: StoreEnvironment = .production, store: VerifiedTransaction.Store = .appStore, second: Int = 100
) -> RefundEvent {
    RefundEvent(
        sourceEventId: eventId, kind: kind, store: store, environment: environment, transactionId: transactionId,
        signedDate: Date(timeIntervalSince1970: 1_760_000_000 + Double(second)),
        revocationReason: kind == .refund ? 0 : nil,
        evidenceSHA256: fakeDigest("event/\(eventId)"))
}

extension PurchaseOutcome {
    var isRecorded: Bool { if case .recorded = self { true } else { false } }
    var isDuplicate: Bool { if case .duplicate = self { true } else { false } }
    var conflict: PurchaseConflict? { if case .conflict(let reason) = self { reason } else { nil } }
}

/// Who sets Play product ids in the ledger tests (a catalog change needs an actor and a reason).
let playOps = SupportRequest(actor: "ops", reason: "sold on Google Play")
