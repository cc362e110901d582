import AppStoreServerAPI
import Console
import Foundation
import HTTPTypes
import Ledger
import TestSupport
import Testing

/// The console's "Ask Apple" (docs/console.md): Get Transaction History from the fake App Store, each
/// transaction marked as in the ledger or not, within its budget, and nothing written.
@Suite struct ConsoleAppleHistoryTests {
    @Test func appleHistoryMarksWhatTheLedgerHasAndWritesNothing() async throws {
        let fake = RestoreAndSyncTests.aliceAndBob()
        try await RestoreAndSyncTests().withShop(fake) { client, db, api in
            let bought = try await client.api(
                .post, "/api/v1/purchases", uid: "alice", json: ["signedTransaction": fake.signedTransaction("1001")])
            #expect(bought.status == .ok || bought.status == .created, "\(bought.body)")
            let before = try await ledgerRowCounts(db.client)
            let history = AppleHistory(api: api, ledger: LedgerStore(client: db.client))
            guard case .answered(let lines) = await history.history(of: "alice") else {
                Issue.record("Apple's history was not answered")
                return
            }
            #expect(lines.map(\.transaction.transactionId) == ["1001", "1002", "1003"])
            #expect(lines.map(\.inLedger) == [true, false, false])
            #expect(try await ledgerRowCounts(db.client) == before)
            guard case .noAppStorePurchases = await history.history(of: "bob") else {
                Issue.record("bob has no App Store purchase in the ledger to ask about")
                return
            }
        }
    }

    @Test func appleSilentPastTheBudgetIsAFailureInTime() async throws {
        let fake = RestoreAndSyncTests.aliceAndBob()
        try await RestoreAndSyncTests().withShop(fake) { client, db, api in
            let bought = try await client.api(
                .post, "/api/v1/purchases", uid: "alice", json: ["signedTransaction": fake.signedTransaction("1001")])
            #expect(bought.status == .ok || bought.status == .created, "\(bought.body)")
            fake.script(.hang(.seconds(60)), .hang(.seconds(60)), .hang(.seconds(60)), .hang(.seconds(60)))
            let history = AppleHistory(api: api, ledger: LedgerStore(client: db.client), budget: .seconds(1))
            let started = ContinuousClock.now
            guard case .failed = await history.history(of: "alice") else {
                Issue.record("a hanging Apple must fail the page, not answer it")
                return
            }
            #expect(ContinuousClock.now - started < .seconds(10), "the budget bounds the wait")
        }
    }
}
