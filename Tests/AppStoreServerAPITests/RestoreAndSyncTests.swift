import AppStoreServerAPI
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Logging
import NIOCore
import Postgres
import Receipts
import Shop
import ShopServer
import TestSupport
import Testing

/// Restore and sync against a real PostgreSQL and the fake Apple.
@Suite("AppStoreServerAPI uses: restore, sync, not configured")
struct RestoreAndSyncTests {
    typealias Transaction = FakeAppStore.Transaction

    static func serverConfiguration(appStore: AppStoreServerAPIConfiguration?) -> ServerConfiguration {
        ServerConfiguration(
            auth: AuthConfiguration(acceptsDevelopmentTokens: true),
            receipts: VerifierConfiguration(
                bundleId: APITest.bundleId, rootCertificates: [APITest.pki.rootCertificate],
                receiptRootCertificates: [TestReceiptPKI.shared.rootCertificate]),
            appStoreAPI: appStore)
    }

    /// A shop server on a database of its own whose App Store Server API is the fake; `alice` and `bob`
    /// are registered.
    /// - Parameter clock: the clock of the test's own API client (`api`): its request timeouts, backoffs and
    ///   waits run on it (by default the real one).
    func withShop(
        _ fake: FakeAppStore, label: String = #function, setup: TestingSetup = .router, clock: TestClock? = nil,
        configure: @escaping @Sendable (inout ServerConfiguration) -> Void = { _ in },
        _ body: @escaping @Sendable (any TestClientProtocol, TestDatabase, AppStoreServerAPIClient) async throws -> Void
    ) async throws {
        try await fake.run { production, sandbox in
            let settings = APITest.configuration(fake, production: production, sandbox: sandbox)
            try await withTestDatabase(label) { db in
                let ledger = LedgerStore(client: db.client)
                for uid in ["alice", "bob"] {
                    _ = try await ledger.register(uid: uid, profile: try UserProfile(json: #"{"nick":"새싹"}"#))
                }
                var configuration = Self.serverConfiguration(appStore: settings)
                configure(&configuration)
                let app = try buildApplication(
                    configuration: configuration, client: db.client, logger: APITest.quietLogger)
                let api = try clock.map { try APITest.client(settings, clock: $0) } ?? APITest.client(settings)
                try await app.test(setup) { client in
                    try await body(client, db, api)
                    // Inside: the application stops the database client when it shuts down.
                    let report = try await Reconciler(client: db.client).run()
                    #expect(report.passed, "ledger invariants: \(report.text)")
                }
            }
        }
    }

    static func aliceAndBob() -> FakeAppStore {
        let fake = APITest.fake(pageSize: 2)
        fake.add(
            Transaction(
                id: "1001", productId: APITest.product(2), customer: "alice-apple", purchaseMs: 1_763_000_000_001))
        fake.add(
            Transaction(
                id: "1002", productId: "com.memolease.sesac1.background4", customer: "alice-apple",
                purchaseMs: 1_763_000_000_002))
        fake.add(
            Transaction(
                id: "1003", productId: APITest.product(3), customer: "alice-apple", purchaseMs: 1_763_000_000_003))
        fake.add(Transaction(id: "2001", productId: APITest.product(2), customer: "bob-apple"))
        fake.add(Transaction(id: "3001", productId: APITest.product(4), customer: "carol-apple", environment: .sandbox))
        return fake
    }

    @Test("Restore: the whole history for its user, again a duplicate, another user's transaction a conflict")
    func restoreAcrossTwoUsers() async throws {
        let fake = Self.aliceAndBob()
        try await withShop(fake) { client, _, _ in
            let first = try await client.restore(uid: "alice", signedTransaction: fake.signedTransaction("1003"))
            #expect(first.status == .ok, "\(first.body)")
            #expect(first.json["environment"] as? String == "Production")
            #expect(first.outcomes == ["1003": "recorded", "1001": "recorded", "1002": "recorded"])
            let me = try await client.api(.get, "/api/v1/me", uid: "alice")
            let owned = me.json["owned"] as? [String: [Int]]
            #expect(owned?["faces"]?.contains(2) == true && owned?["faces"]?.contains(3) == true)
            #expect(owned?["backgrounds"]?.contains(4) == true)

            // Now alice owns part of the history: a bare id of it is enough.
            let again = try await client.restore(uid: "alice", transactionId: "1001")
            #expect(again.outcomes == ["1001": "duplicate", "1002": "duplicate", "1003": "duplicate"])

            // Even with alice's signed transaction, bob does not get her purchases: they stay with her.
            let stolen = try await client.restore(uid: "bob", signedTransaction: fake.signedTransaction("1002"))
            #expect(stolen.status == .conflict && stolen.errorCode == "transaction_owned_by_another_user")
            let bobBefore = try await client.api(.get, "/api/v1/me", uid: "bob")
            #expect((bobBefore.json["owned"] as? [String: [Int]])?["faces"]?.contains(2) != true)

            let bobs = try await client.restore(uid: "bob", signedTransaction: fake.signedTransaction("2001"))
            #expect(bobs.outcomes == ["2001": "recorded"])
        }
    }

    @Test("Restore: a history bound to another appAccountToken than the caller's purchases is refused")
    func restoreAccountTokenMismatch() async throws {
        let aliceToken = UUID().uuidString.lowercased()
        let daveToken = UUID().uuidString.lowercased()
        let fake = Self.aliceAndBob()
        fake.add(
            Transaction(id: "5001", productId: APITest.product(2), customer: "alice2", appAccountToken: aliceToken))
        fake.add(Transaction(id: "6001", productId: APITest.product(3), customer: "dave", appAccountToken: daveToken))
        fake.add(Transaction(id: "6002", productId: APITest.product(4), customer: "dave", appAccountToken: daveToken))
        try await withShop(fake) { client, _, _ in
            // alice buys 5001 in the app: her account now carries aliceToken (a restore never sets it).
            let bought = try await client.api(
                .post, "/api/v1/purchases", uid: "alice", json: ["signedTransaction": fake.signedTransaction("5001")])
            #expect(bought.status == .ok, "\(bought.body)")
            let foreign = try await client.restore(uid: "alice", signedTransaction: fake.signedTransaction("6002"))
            #expect(foreign.status == .unprocessableContent && foreign.errorCode == "account_token_mismatch")
            let me = try await client.api(.get, "/api/v1/me", uid: "alice")
            #expect((me.json["owned"] as? [String: [Int]])?["faces"]?.contains(3) != true)
        }
    }

    @Test("Restore: each user has a few restores an hour (Apple's quota is the app's); past them 429 with Retry-After")
    func restoreLimit() async throws {
        let fake = Self.aliceAndBob()
        try await withShop(fake, configure: { $0.restoreLimit = RateLimit(count: 2, seconds: 3600) }) {
            client, _, _ in
            let proof = fake.signedTransaction("1003")
            for _ in 0..<2 { #expect(try await client.restore(uid: "alice", signedTransaction: proof).status == .ok) }
            let limited = try await client.restore(uid: "alice", signedTransaction: proof)
            #expect(limited.status == .tooManyRequests && limited.errorCode == "rate_limited")
            #expect(limited.headers[.retryAfter].flatMap(Int.init).map { (1...1800).contains($0) } == true)
            let bobs = try await client.restore(uid: "bob", signedTransaction: fake.signedTransaction("2001"))
            #expect(bobs.status == .ok, "bob has his own")
        }
    }

    @Test("Restore: a sandbox purchase is found after production's not-found; unknown ids are 404")
    func restoreSandboxAndUnknown() async throws {
        let fake = Self.aliceAndBob()
        try await withShop(fake) { client, _, _ in
            // bob bought 3001 in TestFlight (a sandbox purchase); a bare id of it is his to restore.
            let bought = try await client.api(
                .post, "/api/v1/purchases", uid: "bob", json: ["signedTransaction": fake.signedTransaction("3001")])
            #expect(bought.status == .ok, "\(bought.body)")
            fake.resetRequests()
            let sandbox = try await client.restore(uid: "bob", transactionId: "3001")
            #expect(sandbox.status == .ok && sandbox.json["environment"] as? String == "Sandbox")
            #expect(sandbox.outcomes == ["3001": "duplicate"])
            #expect(fake.requests.map(\.environment) == ["production", "sandbox"])
            let unknown = try await client.restore(uid: "bob", transactionId: "424242")
            #expect(unknown.status == .notFound && unknown.errorCode == "transaction_not_found")
            let missing = try await client.api(.post, "/api/v1/purchases/restore", uid: "bob", json: [String: String]())
            #expect(missing.status == .badRequest)
        }
    }

    @Test("Sync: missed notifications (both environments) and refunds applied once; twice, and beside live ones")
    func syncAppliesMissedRefundsOnce() async throws {
        let fake = Self.aliceAndBob()
        // Notifications signed in the last hours (chains are checked at signedDate; the test leaf is a year old).
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let since = Date().addingTimeInterval(-86_400)
        try await withShop(fake) { client, db, api in
            #expect(
                try await client.restore(uid: "alice", signedTransaction: fake.signedTransaction("1001")).status == .ok)
            #expect(
                try await client.restore(uid: "bob", signedTransaction: fake.signedTransaction("2001")).status == .ok)
            // While we were "down": Apple refunded 1001 (its notification never arrived) and sent a REFUND
            // for 1003 that we missed; the REFUND for 2001 did arrive live.
            fake.refund("1001", atMs: 1_763_450_000_000)
            fake.refund("1003", atMs: 1_763_460_000_000)
            fake.refund("2001", atMs: 1_763_470_000_000)
            fake.add(
                FakeAppStore.Notification(
                    uuid: "missed-1003", type: "REFUND", signedDateMs: now - 7_200_000, transactionId: "1003"))
            fake.add(
                FakeAppStore.Notification(
                    uuid: "live-2001", type: "REFUND", signedDateMs: now - 3_600_000, transactionId: "2001"))
            // A sandbox (TestFlight) purchase refunded while we were down: its notification is in the
            // sandbox's history.
            #expect(
                try await client.restore(uid: "bob", signedTransaction: fake.signedTransaction("3001")).status == .ok)
            fake.refund("3001", atMs: now - 5_000_000)
            fake.add(
                FakeAppStore.Notification(
                    uuid: "missed-3001", type: "REFUND", signedDateMs: now - 5_000_000, transactionId: "3001",
                    environment: .sandbox))
            let live = try await client.api(
                .post, "/api/v1/notifications/app-store",
                json: [
                    "signedPayload": fake.signedNotification(
                        uuid: "live-2001", type: "REFUND", signedDateMs: now - 3_600_000, transactionId: "2001")
                ])
            #expect(live.status == .ok && live.json["storage"] as? String == "stored")

            let synchronizer = AppStoreSynchronizer(
                api: api, ledger: LedgerStore(client: db.client), logger: APITest.quietLogger)
            let first = try await synchronizer.sync(since: since)
            #expect(
                first.notificationsSeen == 3 && first.notificationsStored == 2 && first.notificationEventsApplied == 2)
            #expect(first.refundsApplied == 1 && first.failures == 0, "\(first)")
            #expect(
                try await Self.states(db) == [
                    "1001": "refunded", "1002": "live", "1003": "refunded", "2001": "refunded", "3001": "refunded",
                ])

            let refundEntries = try await Self.count(db, "SELECT count(*) FROM journal_entries WHERE kind = 'refund'")
            let second = try await synchronizer.sync(since: since)
            #expect(
                second.notificationsStored == 0 && second.notificationEventsApplied == 0 && second.refundsApplied == 0,
                "\(second)")
            #expect(
                try await Self.count(db, "SELECT count(*) FROM journal_entries WHERE kind = 'refund'") == refundEntries)
            #expect(refundEntries == 4)
            let alice = try await client.api(.get, "/api/v1/me", uid: "alice")
            #expect((alice.json["owned"] as? [String: [Int]])?["faces"]?.contains(2) != true)
        }
    }

    @Test(
        "Sync: four synchronizers at once (four servers each running the periodic sync) apply each missed refund exactly once"
    )
    func concurrentSyncsApplyOnce() async throws {
        let fake = Self.aliceAndBob()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let since = Date().addingTimeInterval(-86_400)
        try await withShop(fake) { client, db, api in
            #expect(
                try await client.restore(uid: "alice", signedTransaction: fake.signedTransaction("1001")).status == .ok)
            #expect(
                try await client.restore(uid: "alice", signedTransaction: fake.signedTransaction("1003")).status == .ok)
            #expect(
                try await client.restore(uid: "bob", signedTransaction: fake.signedTransaction("2001")).status == .ok)
            // Missed while every server was down: a refund only the refund history shows (1001), and
            // REFUND notifications for 1003 and 2001 that never arrived.
            fake.refund("1001", atMs: 1_763_450_000_000)
            fake.refund("1003", atMs: 1_763_460_000_000)
            fake.refund("2001", atMs: 1_763_470_000_000)
            for (uuid, transaction) in [("missed-1003", "1003"), ("missed-2001", "2001")] {
                fake.add(
                    FakeAppStore.Notification(
                        uuid: uuid, type: "REFUND", signedDateMs: now - 7_200_000, transactionId: transaction))
            }
            // Each its own store over the shared pool: the syncs run on separate connections at once.
            let reports = try await withThrowingTaskGroup(of: AppStoreSynchronizer.Report.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try await AppStoreSynchronizer(
                            api: api, ledger: LedgerStore(client: db.client), logger: APITest.quietLogger
                        ).sync(since: since)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(reports.allSatisfy { $0.failures == 0 }, "\(reports)")
            #expect(reports.map(\.notificationsStored).reduce(0, +) == 2, "each notification stored once: \(reports)")
            // Restoring 1001 brought alice's whole history, 1002 (not refunded) too.
            let states = try await Self.states(db)
            #expect(
                states == ["1001": "refunded", "1002": "live", "1003": "refunded", "2001": "refunded"], "\(states)")
            // One refund entry per purchase, however many syncs (and both kinds of evidence) found it.
            #expect(try await Self.count(db, "SELECT count(*) FROM journal_entries WHERE kind = 'refund'") == 3)
        }
    }

    @Test("serve's periodic sync (when turned on) applies a refund Apple's refund history has")
    func periodicSyncService() async throws {
        let fake = Self.aliceAndBob()
        try await withShop(fake, configure: { $0.appStoreSyncInterval = .seconds(1) }) { client, db, _ in
            #expect(
                try await client.restore(uid: "alice", signedTransaction: fake.signedTransaction("1002")).status == .ok)
            fake.refund("1002", atMs: Int64(Date().timeIntervalSince1970 * 1000) - 60_000)
            // The service's 1 s timer runs on the wall clock here (the whole server): wait for its effect,
            // with a bound for a broken test only.
            var state: String?
            let deadline = ContinuousClock.now + .seconds(60)
            while state != "refunded", ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                state = try await Self.states(db)["1002"]
            }
            #expect(state == "refunded")
            #expect(try await Self.states(db)["1001"] == "live")
        }
    }

    @Test("Sync interval without the API configured is refused at start")
    func syncNeedsAPI() throws {
        var configuration = Self.serverConfiguration(appStore: nil)
        configuration.appStoreSyncInterval = .seconds(60)
        #expect(throws: ConfigurationError.self) { try configuration.validate() }
    }

    @Test("Test notification: Apple sends it to our live endpoint; the probe finds it in the inbox")
    func testNotificationArrives() async throws {
        let fake = Self.aliceAndBob()
        // The probe's client runs its request timeouts on a clock nobody moves: what this test checks is the
        // delivery, and on a loaded machine the fake's answer came later than the 700 ms the fast settings
        // allow (a clean run's full suite failed with "test_notification did not answer in time").
        try await withShop(fake, setup: .live, clock: TestClock()) { client, db, api in
            let probe = TestNotificationProbe(
                api: api, ledger: LedgerStore(client: db.client), pollInterval: .milliseconds(100))
            // Apple says SUCCESS but nothing reached us: the probe believes the inbox, not Apple.
            guard case .notArrived(let status) = try await probe.run(timeout: .milliseconds(600)) else {
                Issue.record("a notification that was never sent was found")
                return
            }
            #expect(status?.delivered == true)

            fake.deliverTestNotifications(to: "http://127.0.0.1:\(client.port!)/api/v1/notifications/app-store")
            // A bound, not a wait: the probe returns as soon as the notification is stored.
            let outcome = try await probe.run(timeout: .seconds(60))
            guard case .stored(let uuid, let attempts) = outcome else {
                Issue.record("the test notification did not arrive: \(outcome)")
                return
            }
            #expect(attempts.map(\.result) == ["SUCCESS"])
            #expect(try await LedgerStore(client: db.client).isNotificationStored(uuid))
        }
    }

    @Test("Not configured: restore answers 501 after auth; the rest of the server is unchanged")
    func notConfigured() async throws {
        try await withTestDatabase { db in
            let app = try buildApplication(
                configuration: Self.serverConfiguration(appStore: nil), client: db.client, logger: APITest.quietLogger)
            try await app.test(.router) { client in
                let answer = try await client.restore(uid: "alice", transactionId: "1001")
                #expect(answer.status == .notImplemented && answer.errorCode == "app_store_api_not_configured")
                let anonymous = try await client.api(.post, "/api/v1/purchases/restore", json: ["transactionId": "1"])
                #expect(anonymous.status == .unauthorized)
                #expect(try await client.api(.get, "/api/v1/catalog").status == .ok)
            }
        }
    }

    static func states(_ db: TestDatabase) async throws -> [String: String] {
        var states: [String: String] = [:]
        for row in try await db.client.query(
            "SELECT p.transaction_id, \(unsafeSQL: "coalesce((SELECT purchase_state_after(j.kind) FROM journal_entries j WHERE j.transaction_id = p.transaction_id ORDER BY j.seq DESC LIMIT 1), 'live')") FROM purchases p"
        ) {
            let (id, state) = try row.decode((String, String).self)
            states[id] = state
        }
        return states
    }

    static func count(_ db: TestDatabase, _ sql: String) async throws -> Int {
        try await db.client.query(PostgresQuery(unsafeSQL: sql)).single().decode(Int.self, at: 0)
    }
}

/// One answer of the shop.
struct ShopAnswer: Sendable {
    let status: HTTPResponse.Status
    var headers: HTTPFields = [:]
    let body: String

    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]) ?? [:] }
    var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
    /// transactionId → outcome of a restore answer.
    var outcomes: [String: String] {
        var result: [String: String] = [:]
        for entry in json["results"] as? [[String: Any]] ?? [] {
            if let id = entry["transactionId"] as? String, let outcome = entry["outcome"] as? String {
                result[id] = outcome
            }
        }
        return result
    }
}

extension TestClientProtocol {
    func api(
        _ method: HTTPRequest.Method, _ uri: String, uid: String? = nil, json: Any? = nil
    ) async throws -> ShopAnswer {
        var headers: HTTPFields = [:]
        if let uid { headers[.authorization] = "Bearer dev:\(uid)" }
        var body: ByteBuffer?
        if let json {
            headers[.contentType] = "application/json"
            body = ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: json))
        }
        return try await execute(uri: uri, method: method, headers: headers, body: body) { response in
            ShopAnswer(status: response.status, headers: response.headers, body: String(buffer: response.body))
        }
    }

    /// A restore naming a bare transaction id (taken from who owns part of its history).
    func restore(uid: String, transactionId: String) async throws -> ShopAnswer {
        try await api(.post, "/api/v1/purchases/restore", uid: uid, json: ["transactionId": transactionId])
    }

    /// A restore proven with a StoreKit 2 signed transaction from the device.
    func restore(uid: String, signedTransaction: String) async throws -> ShopAnswer {
        try await api(.post, "/api/v1/purchases/restore", uid: uid, json: ["signedTransaction": signedTransaction])
    }
}
