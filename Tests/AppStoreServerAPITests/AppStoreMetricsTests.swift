import AppStoreServerAPI
import Foundation
import HTTPTypes
import Ledger
import Receipts
import Shop
import TestSupport
import Testing

@testable import ShopServer

/// The App Store side on `/metrics`: requests to Apple, failed calls and their latency by endpoint, and
/// the sync's runs, against the fake Apple on loopback.
@Suite("Metrics of the App Store Server API client and the App Store sync")
struct AppStoreMetricsTests {
    /// The value of the sample `name{labels}` (labels in any order), nil when there is none.
    static func sample(_ text: String, _ name: String, _ labels: [String: String] = [:]) -> Double? {
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " ") else { continue }
            let series = line[..<space]
            let value = Double(line[line.index(after: space)...])
            var seriesName = Substring(series)
            var found: [String: String] = [:]
            if let brace = series.firstIndex(of: "{") {
                seriesName = series[..<brace]
                let inner = series[series.index(after: brace)..<series.index(before: series.endIndex)]
                for pair in inner.split(separator: ",") {
                    let parts = pair.split(separator: "=", maxSplits: 1)
                    guard parts.count == 2 else { continue }
                    found[String(parts[0])] = String(parts[1].dropFirst().dropLast())
                }
            }
            if seriesName == name, found == labels { return value }
        }
        return nil
    }

    static func text(_ metrics: ShopMetrics) -> String {
        String(decoding: metrics.registryText(), as: UTF8.self)
    }

    @Test(
        "each request to Apple is counted by endpoint and status, with its latency; a call that fails for good by its code"
    )
    func clientRequestsAndErrors() async throws {
        let fake = APITest.fake()
        fake.add(FakeAppStore.Transaction(id: "8801", productId: APITest.product(1), customer: "m"))
        // Every attempt at 8802 answers 500: the client tries 3 times, then the call fails.
        fake.script(.status(500, errorCode: nil), times: 3, for: .init(path: "/inApps/v1/transactions/8802"))
        try await fake.run { production, sandbox in
            let metrics = ShopMetrics()
            let client = try AppStoreServerAPIClient(
                configuration: APITest.configuration(fake, production: production, sandbox: sandbox),
                prover: APITest.verifier, logger: APITest.quietLogger, observer: metrics)

            _ = try await client.transactionInfo("8801")
            var text = Self.text(metrics)
            let ok = ["endpoint": "transaction_info", "status": "200"]
            #expect(Self.sample(text, "shop_appstore_api_requests_total", ok) == 1, "\(text)")
            #expect(
                Self.sample(text, "shop_appstore_api_request_duration_seconds_count", ["endpoint": "transaction_info"])
                    == 1, "\(text)")
            let errors = text.split(separator: "\n").filter { $0.hasPrefix("shop_appstore_api_errors_total{") }
            #expect(!errors.isEmpty && errors.allSatisfy { $0.hasSuffix(" 0") }, "no call failed yet:\n\(text)")
            #expect(!text.contains("8801"), "ids never become labels")

            await #expect(throws: AppStoreServerAPIError.self) { try await client.transactionInfo("8802") }
            text = Self.text(metrics)
            let failed = ["endpoint": "transaction_info", "status": "500"]
            #expect(Self.sample(text, "shop_appstore_api_requests_total", failed) == 3, "each attempt:\n\(text)")
            #expect(Self.sample(text, "shop_appstore_api_requests_total", ok) == 1, "\(text)")
            #expect(
                Self.sample(
                    text, "shop_appstore_api_errors_total", ["endpoint": "transaction_info", "code": "api_error"])
                    == 1, "one call failed:\n\(text)")
            #expect(
                Self.sample(text, "shop_appstore_api_request_duration_seconds_count", ["endpoint": "transaction_info"])
                    == 4, "\(text)")
            #expect(!text.contains("8802"), "ids never become labels")
        }
    }

    @Test("sync runs: partial while a step fails, then ok with its time; what it stored is counted")
    func syncRuns() async throws {
        let fake = RestoreAndSyncTests.aliceAndBob()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try await RestoreAndSyncTests().withShop(fake) { client, db, api in
            #expect(
                try await client.restore(uid: "bob", signedTransaction: fake.signedTransaction("2001")).status == .ok)
            // Apple refunded 2001 and its notification never arrived: the sync stores and applies it.
            fake.refund("2001", atMs: now - 60_000)
            fake.add(
                FakeAppStore.Notification(
                    uuid: "metrics-refund", type: "REFUND", signedDateMs: now - 60_000, transactionId: "2001"))
            // The first run's sandbox history fails (every attempt); the runs after it answer.
            fake.script(.status(500, errorCode: nil), times: 3, for: .notificationHistory(in: .sandbox))
            let metrics = ShopMetrics()
            let clock = TestClock()
            let observed = try AppStoreServerAPIClient(
                configuration: api.configuration, prover: APITest.verifier, logger: APITest.quietLogger,
                observer: metrics)
            let service = AppStoreSyncService(
                synchronizer: AppStoreSynchronizer(
                    api: observed, ledger: LedgerStore(client: db.client), logger: APITest.quietLogger),
                interval: .seconds(600), firstLookBack: 86_400, logger: APITest.quietLogger, counters: metrics,
                clock: clock)
            let started = Date()
            let run = Task { try await service.run() }
            // Two runs (the first partial, the second whole): each ends asleep on the test's clock.
            try #require(await clock.waitForSleepers(1), "the first run ended")
            clock.advance(by: .seconds(600))
            try #require(await clock.waitForSleepers(1), "the second run ended")
            let text = Self.text(metrics)
            run.cancel()
            _ = try? await run.value
            #expect(Self.sample(text, "shop_appstore_sync_runs_total", ["result": "partial"]) == 1, "\(text)")
            #expect((Self.sample(text, "shop_appstore_sync_runs_total", ["result": "ok"]) ?? 0) >= 1, "\(text)")
            #expect(Self.sample(text, "shop_appstore_sync_runs_total", ["result": "failed"]) == 0, "\(text)")
            let last = try #require(Self.sample(text, "shop_appstore_sync_last_success_timestamp_seconds"), "\(text)")
            #expect(last >= started.timeIntervalSince1970 && last <= Date().timeIntervalSince1970 + 1)
            #expect((Self.sample(text, "shop_appstore_sync_failures_total") ?? 0) >= 1, "\(text)")
            #expect(
                Self.sample(text, "shop_appstore_sync_applied_total", ["kind": "notifications_stored"]) == 1, "\(text)")
            #expect(
                Self.sample(
                    text, "shop_appstore_api_requests_total", ["endpoint": "notification_history", "status": "500"])
                    == 3, "\(text)")
            #expect(
                Self.sample(
                    text, "shop_appstore_api_errors_total", ["endpoint": "notification_history", "code": "api_error"])
                    == 1, "\(text)")
        }
    }
}
