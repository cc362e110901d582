import Foundation
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Ledger

@Suite("Account tokens")
struct AccountTokenTests {
    static let tokenA = UUID(uuidString: "6f1c1b0e-5b8a-4f3e-9a57-0c2d6a1e9b11")!
    static let tokenB = UUID(uuidString: "0a0b0c0d-1111-4222-8333-444455556666")!

    @Test("two first purchases of one user with different tokens at the same instant: one recorded, one refused")
    func concurrentFirstPurchases() async throws {
        try await withLedger { db, _ in
            let ledger = LedgerStore(client: db.client, groupCommit: .off)
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            // Another transaction holds alice's face 1 grant row, so both purchases (of face 1) get past
            // every read before either can commit: the two arrive "at the same instant".
            let results = try await Self.whileGrantRowHeld(db, uid: "alice", item: .face(1), lockWaiters: 2) {
                [
                    Task { try await ledger.recordPurchase(makeTransaction("a1", token: Self.tokenA), for: "alice") },
                    Task { try await ledger.recordPurchase(makeTransaction("a2", token: Self.tokenB), for: "alice") },
                ]
            }
            try await Self.expectOneRecordedOneRefused(results, db, uid: "alice")
        }
    }

    @Test("group commit: a batch holding two first purchases of one user with different tokens records only one")
    func firstPurchasesInOneBatch() async throws {
        try await withLedger(maximumConnections: 8) { db, _ in
            let ledger = LedgerStore(client: db.client, groupCommit: GroupCommit(maxBatch: 32, maxInFlight: 1))
            for uid in ["alice", "carol"] { _ = try await ledger.register(uid: uid, profile: testProfile) }
            let results = try await Self.queuedAsOneBatch(
                ledger, db,
                [
                    makeTransaction("c1", item: .face(2), token: Self.tokenA),
                    makeTransaction("c2", item: .face(3), token: Self.tokenB),
                ], for: "carol")
            let statistics = ledger.batcher.statistics
            #expect(statistics.batches + statistics.failedBatches == 1, "carol's purchases went as one batch")
            #expect((try? results[0].get())?.isRecorded == true)
            try await Self.expectOneRecordedOneRefused(Array(results.dropFirst()), db, uid: "carol")
        }
    }

    @Test("within one batch, a purchase whose token is not the user's is refused and the others are recorded")
    func mismatchInABatch() async throws {
        try await withLedger(maximumConnections: 8) { db, _ in
            let ledger = LedgerStore(client: db.client, groupCommit: GroupCommit(maxBatch: 32, maxInFlight: 1))
            for uid in ["alice", "carol"] { _ = try await ledger.register(uid: uid, profile: testProfile) }
            #expect(
                try await ledger.recordPurchase(makeTransaction("c0", item: .face(2), token: Self.tokenA), for: "carol")
                    .isRecorded)
            let before = try await ledgerRowCounts(db.client)
            let results = try await Self.queuedAsOneBatch(
                ledger, db,
                [
                    makeTransaction("c1", item: .face(3), token: Self.tokenA),
                    makeTransaction("c2", item: .face(4), token: Self.tokenB),
                    makeTransaction("c3", item: .background(4)),
                ], for: "carol")
            #expect((try? results[0].get())?.isRecorded == true, "the lead")
            #expect((try? results[1].get())?.isRecorded == true, "the user's token")
            #expect(Self.isMismatch(results[2]), "another token: \(results[2])")
            #expect((try? results[3].get())?.isRecorded == true, "no token: nothing to compare")
            let after = try await ledgerRowCounts(db.client)
            #expect(after["purchases"] == before["purchases"].map { $0 + 3 }, "lead, c1 and c3; not c2")
            let statistics = ledger.batcher.statistics
            #expect(statistics.batches == 1 && statistics.largestBatch == 3, "\(statistics)")
            #expect(try await scalar(db.client, "SELECT count(*) FROM purchases WHERE transaction_id = 'c2'") == 0)
        }
    }

    @Test("a refused purchase (another user's transaction) does not set the user's token")
    func conflictSetsNoToken() async throws {
        try await withLedger { db, ledger in
            for uid in ["alice", "bob"] { _ = try await ledger.register(uid: uid, profile: testProfile) }
            #expect(try await ledger.recordPurchase(makeTransaction("b1", token: Self.tokenB), for: "bob").isRecorded)
            let replay = try await ledger.recordPurchase(makeTransaction("b1", token: Self.tokenB), for: "alice")
            #expect(replay.conflict == .ownedByAnotherUser)
            #expect(
                try await ledger.recordPurchase(makeTransaction("a1", item: .face(2), token: Self.tokenA), for: "alice")
                    .isRecorded, "alice's own token is still free to be hers")
        }
    }

    @Test("migration 0009 gives each user the token of their first purchase that carries one")
    func migrationBackfill() async throws {
        try await withTestDatabase { db in
            try await db.client.query("CREATE SCHEMA scratch")
            let scratch = PostgresClient(
                configuration: .init(
                    connection: .init(url: db.url + "&options=-csearch_path%3Dscratch"), maximumConnections: 2))
            defer { Task { await scratch.shutdown() } }
            let migrator = try LedgerSchema.migrator()
            _ = try await migrator.migrate(scratch, upTo: 7)
            try await scratch.query(
                """
                INSERT INTO users (uid, profile) SELECT u, '{}' FROM unnest(ARRAY['one', 'mixed', 'none']) u
                """)
            // mixed: token A first (recorded earlier), then B (the race, or rows from before the check).
            let rows: [(String, String, UUID?, Int)] = [
                ("one", "t1", Self.tokenA, 1), ("one", "t2", Self.tokenA, 2), ("mixed", "t3", Self.tokenB, 4),
                ("mixed", "t4", Self.tokenA, 3), ("none", "t5", nil, 5),
            ]
            for (uid, transaction, token, second) in rows {
                try await scratch.query(
                    """
                    INSERT INTO purchases (store, environment, transaction_id, original_transaction_id, uid, product_id,
                        item_kind, item_index, book, purchased_at, ownership, app_account_token, signed_at,
                        evidence_sha256, recorded_at)
                    VALUES ('app_store', 'Production', \(transaction)::text, \(transaction)::text, \(uid)::text,
                        'com.memolease.sesac1.sprout1', 'face', 1, 'production', now(), 'PURCHASED', \(token)::uuid,
                        now(), sha256(\(transaction)::bytea), now() + make_interval(secs => \(second)::int))
                    """)
            }
            #expect(try await migrator.migrate(scratch).contains { $0.hasPrefix("0009_") })
            let tokens = try await scratch.query("SELECT uid, app_account_token FROM users ORDER BY uid").map {
                try $0.decode((String, UUID?).self)
            }
            #expect(tokens.map(\.0) == ["mixed", "none", "one"])
            #expect(tokens.map(\.1) == [Self.tokenA, nil, Self.tokenA])
        }
    }

    @Test("a user's token, once set, cannot be changed")
    func tokenNeverChanges() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            #expect(try await ledger.recordPurchase(makeTransaction("a1", token: Self.tokenA), for: "alice").isRecorded)
            let error = try await #require(throws: PostgresError.self) {
                try await db.client.query(
                    "UPDATE users SET app_account_token = \(Self.tokenB)::uuid WHERE uid = 'alice'")
            }
            #expect(error.sqlState == SQLState("SL001"), "\(error)")
        }
    }

    /// Runs `start` while another transaction holds `uid`'s grant row of `item` (inserted, not yet
    /// committed) until `lockWaiters` sessions wait on it (and `ready` holds); returns the results of
    /// the tasks `start` started.
    static func whileGrantRowHeld(
        _ db: TestDatabase, uid: String, item: ItemID, lockWaiters: Int,
        ready: @escaping () -> Bool = { true },
        _ start: () async throws -> [Task<PurchaseOutcome, any Error>]
    ) async throws -> [Result<PurchaseOutcome, any Error>] {
        let holder = try await HeldTransaction(
            db,
            """
            INSERT INTO grants (uid, item_kind, item_index)
            VALUES (\(uid)::text, \(item.kind.rawValue)::text, \(item.index)::int)
            """)
        let tasks = try await start()
        try await waitForLockWaiters(db, lockWaiters)
        try await waitUntil("the purchases are staged") { ready() }
        try await holder.commit()
        var results: [Result<PurchaseOutcome, any Error>] = []
        for task in tasks { results.append(await task.result) }
        return results
    }

    /// With group commit one statement at a time: alice's purchase takes the only slot and waits on
    /// her held grant row while `transactions` (of `uid`) queue behind it, so they go as one batch
    /// when it finishes. Returns the lead's result, then theirs.
    static func queuedAsOneBatch(
        _ ledger: LedgerStore, _ db: TestDatabase, _ transactions: [VerifiedTransaction], for uid: String
    ) async throws -> [Result<PurchaseOutcome, any Error>] {
        try await whileGrantRowHeld(
            db, uid: "alice", item: .face(1), lockWaiters: 1,
            ready: { ledger.batcher.queuedCount == transactions.count }
        ) {
            let lead = Task { try await ledger.recordPurchase(makeTransaction("lead"), for: "alice") }
            // The lead holds the only slot (it waits on the held row) before the others arrive.
            try await waitForLockWaiters(db, 1)
            return [lead]
                + transactions.map { transaction in Task { try await ledger.recordPurchase(transaction, for: uid) } }
        }
    }

    static func isMismatch(_ result: Result<PurchaseOutcome, any Error>) -> Bool {
        if case .failure(let error as LedgerError) = result { return error.code == .accountTokenMismatch }
        return false
    }

    static func expectOneRecordedOneRefused(
        _ results: [Result<PurchaseOutcome, any Error>], _ db: TestDatabase, uid: String
    ) async throws {
        let recorded = results.filter { (try? $0.get())?.isRecorded == true }
        #expect(recorded.count == 1, "\(results)")
        #expect(results.filter(Self.isMismatch).count == 1, "\(results)")
        #expect(try await scalar(db.client, "SELECT count(*) FROM purchases WHERE uid = \(uid)::text") == 1)
        #expect(
            try await scalar(
                db.client,
                "SELECT count(DISTINCT app_account_token) FROM purchases WHERE uid = \(uid)::text") == 1)
    }
}
