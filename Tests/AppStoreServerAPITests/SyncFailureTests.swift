import AppStoreServerAPI
import Foundation
import HTTPTypes
import HummingbirdTesting
import Ledger
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Shop
@testable import ShopServer

/// A sync keeps what it fetched and verified: one environment's notification history failing, a later
/// page failing, or one step failing (Apple or the database) loses nothing the others brought, and says
/// which failed. A start date older than Apple keeps is clamped to the environment's window.
@Suite("AppStoreServerAPI sync keeps what it verified")
struct SyncFailureTests {
    typealias Notification = FakeAppStore.Notification

    static let day: TimeInterval = 86_400
    static var nowMs: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// alice's purchases 1001–1003 (production) and bob's 3001 (sandbox) recorded by restore.
    static func restoreAliceAndBob(_ client: any TestClientProtocol, _ fake: FakeAppStore) async throws {
        #expect(try await client.restore(uid: "alice", signedTransaction: fake.signedTransaction("1001")).status == .ok)
        #expect(try await client.restore(uid: "bob", signedTransaction: fake.signedTransaction("3001")).status == .ok)
    }

    static func synchronizer(_ api: AppStoreServerAPIClient, _ db: TestDatabase) -> AppStoreSynchronizer {
        AppStoreSynchronizer(api: api, ledger: LedgerStore(client: db.client), logger: APITest.quietLogger)
    }

    static func stored(_ db: TestDatabase, _ uuid: String) async throws -> Bool {
        try await LedgerStore(client: db.client).isNotificationStored(uuid)
    }

    /// The `startDate` of each Get Notification History request to `environment` (`production`,
    /// `sandbox`), in order.
    static func historyStarts(_ fake: FakeAppStore, _ environment: String) -> [Int64?] {
        fake.requests.filter { $0.path == FakeAppStore.Target.notificationHistoryPath && $0.environment == environment }
            .map(\.startDateMs)
    }

    @Test(
        "Sync from 40 days back: production's REFUND from 35 days ago is stored; the sandbox is asked from its 30 days"
    )
    func sinceBeyondTheSandboxWindow() async throws {
        let fake = RestoreAndSyncTests.aliceAndBob()
        let now = Self.nowMs
        let since = Date().addingTimeInterval(-40 * Self.day)
        try await RestoreAndSyncTests().withShop(fake) { client, db, api in
            try await Self.restoreAliceAndBob(client, fake)
            fake.refund("1003", atMs: now - 35 * 86_400_000)
            fake.add(
                Notification(
                    uuid: "old-1003", type: "REFUND", signedDateMs: now - 35 * 86_400_000, transactionId: "1003"))
            fake.refund("3001", atMs: now - 10 * 86_400_000)
            fake.add(
                Notification(
                    uuid: "sandbox-3001", type: "REFUND", signedDateMs: now - 10 * 86_400_000, transactionId: "3001",
                    environment: .sandbox))
            fake.resetRequests()
            let report = try await Self.synchronizer(api, db).sync(since: since)
            let after = Self.nowMs
            #expect(report.notificationsStored == 2 && report.failures == 0, "\(report)")
            #expect(report.failed.isEmpty && report.notificationHistoryComplete, "\(report.failed)")
            // Production keeps 180 days: asked from `since`. The sandbox keeps 30: asked from 30 days back
            // and the hour's margin, warned.
            #expect(Self.historyStarts(fake, "production") == [Int64(since.timeIntervalSince1970 * 1000)])
            let sandboxStart = try #require(Self.historyStarts(fake, "sandbox").first ?? nil)
            let window: Int64 = 30 * 86_400_000 - 3_600_000
            #expect((now - window...after - window).contains(sandboxStart), "\(sandboxStart)")
            #expect(report.warnings.count == 1, "\(report.warnings)")
            #expect(report.warnings.first?.hasPrefix("notification history (Sandbox): the start ") == true)
            #expect(try await Self.stored(db, "old-1003"))
            #expect(try await Self.stored(db, "sandbox-3001"))
            #expect(try await RestoreAndSyncTests.states(db)["1003"] == "refunded")
            #expect(try await RestoreAndSyncTests.states(db)["3001"] == "refunded")
        }
    }

    @Test(
        "Sync: the sandbox's history failing keeps production's verified REFUND; prices and refund history still run"
    )
    func oneEnvironmentFails() async throws {
        let fake = RestoreAndSyncTests.aliceAndBob()
        let now = Self.nowMs
        try await RestoreAndSyncTests().withShop(fake) { client, db, api in
            try await Self.restoreAliceAndBob(client, fake)
            // A REFUND in production's history; a refund only the refund history shows (1002).
            fake.refund("1003", atMs: now - 7_200_000)
            fake.add(
                Notification(uuid: "prod-1003", type: "REFUND", signedDateMs: now - 7_200_000, transactionId: "1003"))
            fake.refund("1002", atMs: now - 3_600_000)
            // The sandbox's notification history does not answer, every attempt.
            fake.script(.status(500, errorCode: nil), times: 3, for: .notificationHistory(in: .sandbox))
            let report = try await Self.synchronizer(api, db).sync(since: Date().addingTimeInterval(-Self.day))
            #expect(try await Self.stored(db, "prod-1003"), "\(report)")
            let states = try await RestoreAndSyncTests.states(db)
            #expect(states["1003"] == "refunded" && states["1002"] == "refunded", "\(states)")
            #expect(report.notificationsStored == 1 && report.customersChecked == 2, "\(report)")
            #expect(report.failures == 1, "\(report)")
            let failure = try #require(report.failed.first)
            #expect(failure.step == .notificationHistory && failure.environment == .sandbox && failure.subject == nil)
            #expect(failure.reason.contains("HTTP 500"), "\(failure)")
            #expect(report.notificationHistoryIncomplete == [.sandbox])
        }
    }

    @Test("Sync: production's history failing keeps the sandbox's")
    func productionFails() async throws {
        let fake = RestoreAndSyncTests.aliceAndBob()
        let now = Self.nowMs
        try await RestoreAndSyncTests().withShop(fake) { client, db, api in
            try await Self.restoreAliceAndBob(client, fake)
            fake.refund("3001", atMs: now - 3_600_000)
            fake.add(
                Notification(
                    uuid: "sandbox-3001", type: "REFUND", signedDateMs: now - 3_600_000, transactionId: "3001",
                    environment: .sandbox))
            fake.script(.status(401, errorCode: 4_010_000), times: 2, for: .notificationHistory(in: .production))
            let report = try await Self.synchronizer(api, db).sync(since: Date().addingTimeInterval(-Self.day))
            #expect(try await Self.stored(db, "sandbox-3001"), "\(report)")
            #expect(report.failures == 1, "\(report)")
            #expect(
                report.failed.map(\.description) == ["notification history (Production): \(report.failed[0].reason)"])
            #expect(report.failed.first?.reason.contains("HTTP 401, errorCode 4010000") == true)
            #expect(report.notificationHistoryIncomplete == [.production])
        }
    }

    @Test("Sync: a later page failing keeps the pages before it; the next sync stores the rest")
    func laterPageFails() async throws {
        let fake = RestoreAndSyncTests.aliceAndBob()
        let now = Self.nowMs
        let uuids = (0..<5).map { "declined-\($0)" }
        for (index, uuid) in uuids.enumerated() {
            fake.add(
                Notification(
                    uuid: uuid, type: "REFUND_DECLINED", signedDateMs: now - 3_600_000 + Int64(index) * 1000,
                    transactionId: "1001"))
        }
        try await RestoreAndSyncTests().withShop(fake) { client, db, api in
            try await Self.restoreAliceAndBob(client, fake)
            // Pages of two: the second page of production's history fails (every attempt).
            fake.script(.status(500, errorCode: nil), times: 3, for: .notificationHistory(in: .production, page: 2))
            let since = Date().addingTimeInterval(-Self.day)
            let first = try await Self.synchronizer(api, db).sync(since: since)
            var stored: [String] = []
            for uuid in uuids where try await Self.stored(db, uuid) { stored.append(uuid) }
            #expect(stored == Array(uuids.prefix(2)), "\(first)")
            #expect(first.notificationsStored == 2 && first.failures == 1, "\(first)")
            #expect(
                first.failed.first?.environment == .production && first.notificationHistoryIncomplete == [.production])
            // Page 3 was never asked: the failure ended production's history there.
            #expect(Self.historyStarts(fake, "production").count == 1 + 3)

            let second = try await Self.synchronizer(api, db).sync(since: since)
            #expect(second.notificationsSeen == 5 && second.notificationsStored == 3 && second.failures == 0)
            #expect(second.notificationHistoryComplete)
            for uuid in uuids { #expect(try await Self.stored(db, uuid)) }
        }
    }

    @Test("Sync: the prices step's work list failing (a database error) is reported; refund history still runs")
    func pricesWorkListFails() async throws {
        let fake = RestoreAndSyncTests.aliceAndBob()
        try await RestoreAndSyncTests().withShop(fake) { client, db, api in
            try await Self.restoreAliceAndBob(client, fake)
            fake.refund("1002", atMs: Self.nowMs - 3_600_000)
            try await db.client.query("ALTER TABLE price_lookups RENAME TO price_lookups_away")
            let report = try await Self.synchronizer(api, db).sync(since: Date().addingTimeInterval(-Self.day))
            try await db.client.query("ALTER TABLE price_lookups_away RENAME TO price_lookups")
            #expect(try await RestoreAndSyncTests.states(db)["1002"] == "refunded", "\(report)")
            #expect(report.refundsApplied == 1 && report.failures == 1, "\(report)")
            let failure = try #require(report.failed.first)
            #expect(failure.step == .prices && failure.environment == nil && failure.subject == nil)
            #expect(failure.reason.contains("price_lookups"), "\(failure)")
            // Not the notification history: a periodic sync moves on.
            #expect(report.notificationHistoryComplete)
        }
    }

    @Test("Sync: a period wholly older than the sandbox keeps is not asked there (warned); production is asked")
    func periodBeyondTheSandboxWindow() async throws {
        let fake = RestoreAndSyncTests.aliceAndBob()
        let now = Self.nowMs
        fake.add(
            Notification(
                uuid: "declined-1001", type: "REFUND_DECLINED", signedDateMs: now - 50 * 86_400_000,
                transactionId: "1001"))
        try await RestoreAndSyncTests().withShop(fake) { _, db, api in
            let report = try await Self.synchronizer(api, db).sync(
                since: Date().addingTimeInterval(-60 * Self.day), until: Date().addingTimeInterval(-45 * Self.day))
            #expect(report.notificationsStored == 1 && report.failures == 0, "\(report)")
            #expect(try await Self.stored(db, "declined-1001"))
            #expect(Self.historyStarts(fake, "production").count == 1)
            #expect(Self.historyStarts(fake, "sandbox").isEmpty)
            #expect(report.warnings.count == 1, "\(report.warnings)")
            #expect(report.warnings.first?.hasPrefix("notification history (Sandbox): the start ") == true)
            #expect(report.warnings.first?.hasSuffix("; the period is not asked") == true, "\(report.warnings)")
        }
    }

    @Test("Cancelling a sync ends it with CancellationError, not a failure in its report")
    func cancellation() async throws {
        let fake = RestoreAndSyncTests.aliceAndBob()
        fake.script(.hang(.seconds(2)), times: 3, for: .notificationHistory(in: .production))
        try await RestoreAndSyncTests().withShop(fake) { _, db, api in
            let synchronizer = Self.synchronizer(api, db)
            let sync = Task { try await synchronizer.sync(since: Date().addingTimeInterval(-Self.day)) }
            while fake.requests.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
            sync.cancel()
            await #expect(throws: CancellationError.self) { try await sync.value }
        }
    }

    @Test("serve's periodic sync asks the same period again after an environment's history failed, then moves on")
    func periodicSyncKeepsSince() async throws {
        let fake = RestoreAndSyncTests.aliceAndBob()
        // The first run's sandbox history fails (every attempt); the runs after it answer.
        fake.script(.status(500, errorCode: nil), times: 3, for: .notificationHistory(in: .sandbox))
        try await RestoreAndSyncTests().withShop(fake) { _, db, api in
            let clock = TestClock()
            let service = AppStoreSyncService(
                synchronizer: Self.synchronizer(api, db), interval: .seconds(600), firstLookBack: Self.day,
                logger: APITest.quietLogger, clock: clock)
            let run = Task { try await service.run() }
            // Three runs: each ends asleep on the test's clock until the interval is moved past.
            for runs in 1...3 {
                try #require(await clock.waitForSleepers(1), "run \(runs) ended and waits for the interval")
                if runs < 3 { clock.advance(by: .seconds(600)) }
            }
            let starts = Self.historyStarts(fake, "production")
            run.cancel()
            _ = try? await run.value
            try #require(starts.count >= 3, "\(starts)")
            #expect(starts[1] == starts[0], "the sandbox failed: the same period again")
            let moved = try #require(starts[2]) - #require(starts[0])
            // The first run looked back a day; the third from the second's start less 15 minutes.
            #expect(moved > 86_400_000 - 15 * 60_000 - 60_000, "\(starts)")
        }
    }

    @Test("Get Notification History: each item's sendAttempts, Apple's delivery attempts, and the last one's result")
    func sendAttempts() async throws {
        let fake = APITest.fake()
        let signed = Self.nowMs - 86_400_000
        fake.add(FakeAppStore.Transaction(id: "601", productId: APITest.product(1), customer: "a"))
        fake.add(
            Notification(
                uuid: "retried", type: "REFUND", signedDateMs: signed, transactionId: "601",
                attempts: ["TIMED_OUT", "UNSUCCESSFUL_HTTP_RESPONSE_CODE", "SUCCESS"]))
        fake.add(Notification(uuid: "never", type: "REFUND", signedDateMs: signed + 1000, transactionId: "601"))
        try await fake.run { production, sandbox in
            let client = try APITest.client(APITest.configuration(fake, production: production, sandbox: sandbox))
            let entries = try await client.notificationHistory(from: Date().addingTimeInterval(-2 * Self.day))
            #expect(entries.map(\.notification.notificationUUID) == ["retried", "never"])
            #expect(entries.map(\.lastAttempt?.result) == ["SUCCESS", "TIMED_OUT"])
            let retried = try #require(entries.first)
            #expect(retried.sendAttempts.map(\.result) == ["TIMED_OUT", "UNSUCCESSFUL_HTTP_RESPONSE_CODE", "SUCCESS"])
            // Dated on Apple's retry schedule: 1 hour, then 12 hours after the attempt before.
            let dates = retried.sendAttempts.map { $0.date.map { Int64($0.timeIntervalSince1970 * 1000) } }
            #expect(dates == [signed + 500, signed + 500 + 3_600_000, signed + 500 + 13 * 3_600_000])
            #expect(retried.lastAttempt?.date == retried.sendAttempts.last?.date)
        }
    }
}
