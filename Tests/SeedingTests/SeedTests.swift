import CivilDates
import Foundation
import Ledger
import Postgres
import Receipts
import Reports
import TestSupport
import Testing

@testable import Seeding

@Suite("Seeding synthetic purchases")
struct SeedTests {
    @Test("a seeded ledger passes every reconciliation check, and its rows are what the summary says")
    func seededLedgerReconciles() async throws {
        try await withSeedingDatabase { db, _ in
            let configuration = SeedConfiguration(
                purchases: 6_000, days: 40, lastDay: date("2025-06-30"), seed: 9, batchSize: 2_500)
            let summary = try await LedgerSeeder(client: db.client, invalidating: .reportDays).seed(configuration)
            #expect(summary.purchases == 6_000 && summary.users == 2_000)
            func count(_ sql: String) async throws -> Int {
                try await db.client.query(PostgresQuery(unsafeSQL: sql)).single().decode(Int.self, at: 0)
            }
            #expect(try await count("SELECT count(*) FROM purchases") == 6_000)
            #expect(try await count("SELECT count(*) FROM users") == 2_000)
            #expect(try await count("SELECT count(*) FROM journal_entries") == summary.journalEntries)
            #expect(try await count("SELECT count(*) FROM journal_entries WHERE kind = 'refund'") == summary.refunds)
            #expect(
                try await count("SELECT count(*) FROM journal_entries WHERE kind = 'refund_reversal'")
                    == summary.reversals)
            #expect(
                try await count("SELECT count(*) FROM purchases WHERE ownership = 'FAMILY_SHARED'")
                    == summary.familyShared)
            #expect(summary.refunds > 60 && summary.reversals > 0 && summary.familyShared > 40 && summary.revokes > 0)
            #expect(try await count("SELECT count(DISTINCT currency) FROM purchases") == 4)
            #expect(try await count("SELECT count(DISTINCT book) FROM purchases") == 3)
            #expect(
                try await count(
                    "SELECT count(*) FROM purchases WHERE purchased_at < '2025-05-22' OR purchased_at >= '2025-07-01'")
                    == 0)
            // The ledger's own writer still works afterwards (the identity sequence moved past the seeded ids).
            let ledger = LedgerStore(client: db.client)
            _ = try await ledger.register(uid: "after-seed", profile: testProfile)
            let outcome = try await ledger.recordPurchase(
                purchase("after", item: .face(1), at: instant("2025-06-30T12:00:00Z"), price: 1_200_000),
                for: "after-seed")
            guard case .recorded = outcome else { Issue.record("\(outcome)"); return }
            // Seeding again with the same seed is refused before anything is written.
            await #expect(throws: SeedError.self) {
                _ = try await LedgerSeeder(client: db.client, invalidating: .reportDays).seed(configuration)
            }
            #expect(try await count("SELECT count(*) FROM purchases") == 6_001)
        }
    }

    @Test("bad seed settings are refused with a clear message")
    func badSettings() throws {
        let last = date("2025-01-01")
        #expect(throws: SeedError.self) { try SeedConfiguration(purchases: 0, days: 10, lastDay: last).validate() }
        #expect(throws: SeedError.self) { try SeedConfiguration(purchases: 100, days: 0, lastDay: last).validate() }
        do {
            try SeedConfiguration(purchases: 100, days: 10, users: 5, lastDay: last).validate()
            Issue.record("5 users for 100 purchases was accepted")
        } catch let error as SeedError {
            #expect(error.message.contains("--users must be between 10"))
        }
    }

    @Test("the same configuration makes the same purchases; another seed, others; every purchase in its window")
    func deterministic() {
        let configuration = SeedConfiguration(purchases: 2_000, days: 14, lastDay: date("2025-06-30"), seed: 7)
        func generate(_ configuration: SeedConfiguration) -> [SyntheticPurchase] {
            var ledger = SyntheticLedger(configuration: configuration, itemTiers: [0, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1])
            let perDay = ledger.purchasesPerDay()
            #expect(perDay.count == 14 && perDay.reduce(0, +) == 2_000)
            return perDay.enumerated().flatMap { ledger.purchases(onDay: $0.offset, count: $0.element) }
        }
        let once = generate(configuration)
        let again = generate(configuration)
        #expect(once.map(\.purchasedAt) == again.map(\.purchasedAt) && once.map(\.user) == again.map(\.user))
        var other = configuration
        other.seed = 8
        #expect(generate(other).map(\.purchasedAt) != once.map(\.purchasedAt))
        let start = Int64(configuration.firstDay.daysSinceEpoch) * 86_400_000
        let end = Int64(configuration.lastDay.adding(days: 1).daysSinceEpoch) * 86_400_000
        #expect(once.allSatisfy { (start..<end).contains($0.purchasedAt) })
        #expect(once.allSatisfy { purchase in purchase.refundedAt.map { $0 > purchase.purchasedAt } ?? true })
        // Each user buys each item at most once (the items are non-consumable).
        #expect(Set(once.map { "\($0.user)/\($0.item)" }).count == once.count)
    }
}
