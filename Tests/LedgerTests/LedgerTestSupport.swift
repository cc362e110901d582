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
