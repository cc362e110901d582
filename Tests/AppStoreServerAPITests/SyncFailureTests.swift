import AppStoreServerAPI
import Foundation
import HTTPTypes
import HummingbirdTesting
import Ledger
import Postgres
import Receipts
import TestSupport
import Testing

@testable import ShopServer

/// A sync keeps what it fetched and verified: one environment's notification history failing, a later
/// page failing, or one step failing (Apple or the database) loses nothing the others brought, and says
/// which failed. A start date older than Apple keeps is clamped to the environment's window.
@Suite("AppStoreServerAPI sync keeps what it verified")
struct SyncFailureTests {
    typealias Notification = FakeAppStore.Notification

    static let day: TimeInterval = 86_400
    static var nowMs: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

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
