import CivilDates
import Foundation
import Postgres
import Receipts
import Reports
import TestSupport
import Testing

@testable import Ledger

/// `first_purchases` (migration 0011) is kept by a catch-up outside the purchase statement; the
/// reports take the least of it and the purchases recorded since its watermark, so they must come
/// out the same however far the catch-up got.
@Suite("Reports: first purchases caught up")
struct FirstPurchaseCatchUpTests {
    static let users = ["ana", "ben", "cho", "dan", "eve"]

    func buy(
        _ ledger: LedgerStore, _ id: String, _ uid: String, _ item: ItemID, on date: String,
        price: Int64? = 1_200_000, ownership: OwnershipType = .purchased
    ) async throws {
        let outcome = try await ledger.recordPurchase(
            transaction(id, item: item, at: instant("\(date)T03:00:00Z"), price: price, ownership: ownership), for: uid)
        guard case .recorded = outcome else {
            Issue.record("\(id): \(outcome)")
            return
        }
    }

    func table(_ db: TestDatabase) async throws -> [String] {
        try await db.client.query(
            "SELECT uid || ' ' || book || ' ' || to_char(first_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') FROM first_purchases ORDER BY 1"
        ).map { try $0.decode(String.self, at: 0) }
    }

    func watermark(_ db: TestDatabase) async throws -> Date {
        try await db.client.query("SELECT caught_up_to FROM first_purchases_watermark").single().decode(
            Date.self, at: 0)
    }

    @Test("a catch-up run twice changes nothing the second time; the watermark never goes back")
    func idempotent() async throws {
        try await withReportLedger { db, ledger in
            for uid in Self.users { _ = try await ledger.register(uid: uid, profile: testProfile) }
            try await buy(ledger, "a1", "ana", .face(1), on: "2025-06-07")
            try await buy(ledger, "a2", "ana", .face(2), on: "2025-06-03")
            try await buy(ledger, "b1", "ben", .face(1), on: "2025-06-08", ownership: .familyShared)
            try await buy(ledger, "c1", "cho", .face(1), on: "2025-06-09", price: nil)
            let catchUp = FirstPurchaseCatchUp(client: db.client, invalidating: .reportDays)
            guard case .caughtUp(let changed, _, let first) = try await catchUp.run() else {
                Issue.record("the catch-up was skipped on a primary")
                return
            }
            #expect(changed == 1)
            let once = try await table(db)
            // Only ana's priced, self-bought purchases make a first purchase: the earlier one.
            #expect(once == ["ana production 2025-06-03"])
            guard case .caughtUp(let again, _, let second) = try await catchUp.run() else {
                Issue.record("the second catch-up was skipped")
                return
            }
            #expect(again == 0)
            #expect(second >= first)
            #expect(try await table(db) == once)
            // Everything again (what the seeder does) changes nothing either.
            #expect(
                try await catchUp.run(everything: true)
                    == .caughtUp(changed: 0, staleDays: 0, watermark: try await watermark(db)))
            #expect(try await table(db) == once)
        }
    }

    @Test("a purchase committed after a catch-up but recorded before it (its transaction was open) is not lost")
    func openTransactionAcrossCatchUp() async throws {
        try await withReportLedger { db, ledger in
            for uid in Self.users { _ = try await ledger.register(uid: uid, profile: testProfile) }
            try await buy(ledger, "a1", "ana", .face(1), on: "2025-06-10")
            let catchUp = FirstPurchaseCatchUp(client: db.client, invalidating: .reportDays)
            try await catchUp.run()
            let (opened, release) = AsyncStream.makeStream(of: Date.self)
            let (proceed, go) = AsyncStream.makeStream(of: Void.self)
            // ben's purchase, through the ledger's own statement, in a transaction left open across
            // two catch-ups: its recorded_at is that transaction's start.
            let held = Task {
                try await db.client.withTransaction { connection in
                    let input = PurchaseInput(
                        transaction: transaction(
                            "b1", item: .face(2), at: instant("2025-06-10T03:00:00Z"), price: 1_200_000),
                        uid: "ben")
                    let started = try await connection.query("SELECT now()").single().decode(Date.self, at: 0)
                    try await connection.query(PurchaseStatement.single(input, lockingTransaction: false))
                    release.yield(started)
                    for await _ in proceed { break }
                }
            }
            var startedIterator = opened.makeAsyncIterator()
            let started = try #require(await startedIterator.next())
            // Later purchases and catch-ups while ben's transaction stays open, longer than the
            // readers' overlap: a watermark moved past its start would lose ben for good.
            try await Task.sleep(for: .seconds(6))
            try await buy(ledger, "c1", "cho", .face(1), on: "2025-06-10")
            try await catchUp.run()
            try await catchUp.run()
            let mark = try await watermark(db)
            #expect(mark <= started, "the watermark \(mark) passed the open transaction's start \(started)")
            go.yield()
            go.finish()
            try await held.value

            // Without another catch-up the report counts ben (the purchases since the watermark) ...
            let date = day("2025-06-10")
            let before = try await Self.reportWithoutCatchUp(db) {
                try await RevenueReporter(client: db.client).daily(date: date)
            }
            #expect(before.whole.buyersByBook["production"] == BuyerCounts(buyers: 3, firstTime: 3))
            // ... and the next catch-up folds ben in.
            try await catchUp.run()
            #expect(try await table(db).contains("ben production 2025-06-10"))
        }
    }

    @Test("the report is the same with first_purchases empty, partly caught up and fully caught up")
    func sameReportWhateverTheState() async throws {
        try await withReportLedger { db, ledger in
            for uid in Self.users { _ = try await ledger.register(uid: uid, profile: testProfile) }
            // Batch A, folded in.
            try await buy(ledger, "a1", "ana", .face(1), on: "2025-06-07")  // returning on 06-10
            try await buy(ledger, "b1", "ben", .face(1), on: "2025-06-10")  // first on 06-10, until b0
            try await buy(ledger, "c1", "cho", .face(1), on: "2025-06-12")  // after the day
            try await buy(ledger, "d1", "dan", .face(1), on: "2025-06-09", ownership: .familyShared)
            try await FirstPurchaseCatchUp(client: db.client, invalidating: .reportDays).run()
            let folded = try await table(db)
            // Batch B: recorded later, some with earlier purchase dates (restores).
            try await Task.sleep(for: .milliseconds(20))
            let batchBStarts = try await db.client.query("SELECT now()").single().decode(Date.self, at: 0)
            try await buy(ledger, "a2", "ana", .face(2), on: "2025-06-10")
            try await buy(ledger, "b0", "ben", .face(2), on: "2025-06-02")  // ben is returning now
            try await buy(ledger, "c0", "cho", .face(2), on: "2025-06-10")  // cho's first moves to 06-10
            try await buy(ledger, "d2", "dan", .face(2), on: "2025-06-10")  // dan's first priced one
            try await buy(ledger, "e1", "eve", .face(1), on: "2025-06-04")  // a new user, days before

            let date = day("2025-06-10")
            func report() async throws -> RevenueReport {
                try await Self.reportWithoutCatchUp(db) {
                    try await RevenueReporter(client: db.client).daily(date: date)
                }
            }
            // Partly: the table holds batch A only and the watermark says batch B is not folded in.
            try await db.client.query(
                """
                UPDATE first_purchases_watermark
                SET caught_up_to = \(batchBStarts)::timestamptz + \(unsafeSQL: FirstPurchaseSQL.overlap)
                """)
            #expect(try await table(db) == folded)
            let partly = try await report()
            // Empty, nothing folded in.
            try await db.client.query("DELETE FROM first_purchases")
            try await db.client.query("UPDATE first_purchases_watermark SET caught_up_to = '-infinity'")
            let empty = try await report()
            // Fully: caught up from nothing.
            try await FirstPurchaseCatchUp(client: db.client, invalidating: .reportDays).run()
            #expect(
                try await table(db) == [
                    "ana production 2025-06-07", "ben production 2025-06-02", "cho production 2025-06-10",
                    "dan production 2025-06-10", "eve production 2025-06-04",
                ])
            let full = try await report()

            #expect(full.whole.buyersByBook["production"] == BuyerCounts(buyers: 4, firstTime: 2))
            #expect(partly.trend == full.trend && empty.trend == full.trend)
            #expect(RevenueCSV.render(partly) == RevenueCSV.render(full))
            #expect(RevenueCSV.render(empty) == RevenueCSV.render(full))
            let byDay = Dictionary(uniqueKeysWithValues: full.trend.map { ($0.period.first, $0) })
            #expect(byDay[day("2025-06-04")]?.buyersByBook["production"] == BuyerCounts(buyers: 1, firstTime: 1))
            #expect(byDay[day("2025-06-07")]?.buyersByBook["production"] == BuyerCounts(buyers: 1, firstTime: 1))
        }
    }

    /// What a catch-up's invalidation saw from the catch-up's connection, call by call.
    actor Probes {
        struct Probe: Sendable {
            let recorded: FirstPurchaseCatchUp.Invalidation.Recorded
            let locked: Bool
            let watermark: String
            let folded: Int
        }
        var seen: [Probe] = []
        func add(_ probe: Probe) { seen.append(probe) }
    }

    struct Refused: Error {}

    @Test("the catch-up runs its invalidation in its transaction, under its lock, before moving the watermark")
    func invalidationInsideTheCatchUp() async throws {
        try await withReportLedger { db, ledger in
            for uid in Self.users { _ = try await ledger.register(uid: uid, profile: testProfile) }
            try await buy(ledger, "a1", "ana", .face(1), on: "2025-06-07")
            let markText: PostgresQuery = "SELECT caught_up_to::text FROM first_purchases_watermark"
            let before = try await db.client.query(markText).single().decode(String.self, at: 0)
            let since = try await db.client.withConnection { try await FirstPurchaseSQL.since(on: $0) }
            let probes = Probes()
            let probe = FirstPurchaseCatchUp.Invalidation(what: "probed") { recorded, connection in
                let (locked, watermark, folded) = try await connection.query(
                    """
                    SELECT EXISTS (
                               SELECT 1 FROM pg_locks
                               WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted),
                           (SELECT caught_up_to::text FROM first_purchases_watermark),
                           (SELECT count(*) FROM first_purchases)
                    """
                ).single().decode((Bool, String, Int).self)
                await probes.add(.init(recorded: recorded, locked: locked, watermark: watermark, folded: folded))
                return 7
            }
            // What it returns is the outcome's count; it sees the upsert and the old watermark.
            guard case .caughtUp(1, 7, _) = try await FirstPurchaseCatchUp(client: db.client, invalidating: probe).run()
            else {
                Issue.record("the catch-up was skipped, or did not report what its invalidation deleted")
                return
            }
            let first = try #require(await probes.seen.first)
            #expect(first.recorded == .since(since))
            #expect(first.locked)
            #expect(first.watermark == before)
            #expect(first.folded == 1)
            let after = try await db.client.query(markText).single().decode(String.self, at: 0)
            #expect(after != before)

            // An invalidation that fails undoes the whole catch-up: nothing folded in, watermark kept.
            try await buy(ledger, "b1", "ben", .face(1), on: "2025-06-08")
            let refusing = FirstPurchaseCatchUp.Invalidation(what: "refused") { _, _ in throw Refused() }
            await #expect(throws: Refused.self) {
                try await FirstPurchaseCatchUp(client: db.client, invalidating: refusing).run()
            }
            #expect(try await table(db) == ["ana production 2025-06-07"])
            #expect(try await db.client.query(markText).single().decode(String.self, at: 0) == after)

            // Everything (the seeder's run) asks it to forget everything.
            try await FirstPurchaseCatchUp(client: db.client, invalidating: probe).run(everything: true)
            #expect(await probes.seen.count == 2)
            #expect(await probes.seen.last?.recorded == .everything)
            #expect(try await table(db) == ["ana production 2025-06-07", "ben production 2025-06-08"])
        }
    }

    @Test("reconcile finds a first purchase missing, or earlier than any purchase")
    func reconcileCatchesDrift() async throws {
        try await TestGate.reports.run {
            try await withTestDatabase { db in try await corruptAndReconcile(db) }
        }
    }

    func corruptAndReconcile(_ db: TestDatabase) async throws {
        let ledger = LedgerStore(client: db.client)
        for uid in Self.users { _ = try await ledger.register(uid: uid, profile: testProfile) }
        try await buy(ledger, "a1", "ana", .face(1), on: "2025-06-07")
        try await buy(ledger, "b1", "ben", .face(1), on: "2025-06-08")
        try await FirstPurchaseCatchUp(client: db.client, invalidating: .reportDays).run()
        let check = FirstPurchaseInvariants.caughtUp
        func failures() async throws -> [String] {
            try await db.client.withConnection { try await check.run(on: $0, failureLimit: 10) }.failures.map(\.id)
        }
        #expect(try await failures() == [])
        // Purchases recorded within the overlap before the watermark are not checked yet: claim
        // everything recorded until a minute from now is folded in (true here).
        try await db.client.query("UPDATE first_purchases_watermark SET caught_up_to = now() + interval '1 minute'")
        #expect(try await failures() == [])
        try await db.client.query("DELETE FROM first_purchases WHERE uid = 'ana'")
        try await db.client.query("UPDATE first_purchases SET first_at = first_at - interval '1 day' WHERE uid = 'ben'")
        try await db.client.query("INSERT INTO first_purchases VALUES ('cho', 'production', now())")
        #expect(try await failures() == ["ana production", "ben production", "cho production"])
    }

    /// Runs `body` while this test holds the catch-up's lock, so the report's own catch-up skips.
    static func reportWithoutCatchUp(
        _ db: TestDatabase, _ body: () async throws -> RevenueReport
    ) async throws -> RevenueReport {
        try await db.client.withTransaction { connection in
            let locked = try await connection.query("SELECT pg_try_advisory_xact_lock(\(FirstPurchaseCatchUp.lockKey))")
                .single().decode(Bool.self, at: 0)
            try #require(locked)
            return try await body()
        }
    }
}
