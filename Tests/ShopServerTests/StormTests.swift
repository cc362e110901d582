import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Postgres
import Receipts
import ShopServer
import TestSupport
import Testing

/// The same thing arriving many times at once: the App Store retrying a notification, a client retrying
/// a purchase on a flaky network, two accounts posting one receipt. Each must apply exactly once.
///
/// The storms run one at a time, with a long request timeout and pool lease timeout: they check that
/// the copies apply once, not how fast 100 requests for one row get through a saturated 2-core machine
/// (in the full suite they can take longer than the default 10 s, and a 503 would hide the answer).
@Suite("Storms: one notification or purchase delivered 100 times concurrently", .serialized)
struct StormTests {
    static let copies = 100

    /// `withShopServer`, with room for every copy to be answered.
    static func withStormServer(
        _ label: String = #function,
        _ body: @escaping @Sendable (any TestClientProtocol, TestDatabase) async throws -> Void
    ) async throws {
        var configuration = ServerTest.configuration()
        configuration.requestTimeout = .seconds(300)
        try await withTestDatabase(label) { db in
            let client = PostgresClient(
                configuration: .init(
                    connection: .init(url: db.url), minimumConnections: 0, maximumConnections: 8,
                    leaseTimeout: .seconds(300)),
                logger: ServerTest.quietLogger)
            do {
                let app = try buildApplication(
                    configuration: configuration, client: client, logger: ServerTest.quietLogger)
                try await app.test(.router) { testClient in try await body(testClient, db) }
            } catch {
                await client.shutdown()
                throw error
            }
            await client.shutdown()
        }
    }

    /// Sends `copies` requests at once (each built by `request(i)`) and returns every answer.
    static func storm(
        _ client: any TestClientProtocol, copies: Int = StormTests.copies,
        _ request: @escaping @Sendable (Int, any TestClientProtocol) async throws -> Answer
    ) async throws -> [Answer] {
        try await withThrowingTaskGroup(of: Answer.self) { group in
            for index in 0..<copies { group.addTask { try await request(index, client) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }

    static func count(_ db: TestDatabase, _ sql: PostgresQuery) async throws -> Int {
        try await db.client.query(sql).single().decode(Int.self, at: 0)
    }

    @Test(
        "the same REFUND notification (App Store JWS) delivered 100 times concurrently, half of them re-signed, applies once",
        arguments: ["jws", "stub"])
    func refundNotificationStorm(kind: String) async throws {
        try await Self.withStormServer { client, db in
            _ = try await client.api(.post, "/api/v1/me", uid: "storm")
            let transaction = kind == "jws" ? "2000000777000001" : "stub-storm-1"
            let uuid = UUID().uuidString
            let bought: Answer
            let deliveries: [String]
            if kind == "jws" {
                let jws = ServerTest.signedTransaction(product(.face(3)), transaction: transaction)
                bought = try await client.api(
                    .post, "/api/v1/purchases", uid: "storm", json: ["signedTransaction": jws])
                // Apple re-signs a retried notification (another signedDate), same notificationUUID.
                let signed = Date()
                let original = ServerTest.signedNotification(
                    "REFUND", signedTransaction: jws, uuid: uuid, signedDate: signed)
                let resigned = ServerTest.signedNotification(
                    "REFUND", signedTransaction: jws, uuid: uuid, signedDate: signed.addingTimeInterval(0.005))
                #expect(original != resigned)
                deliveries = [original, resigned]
            } else {
                let receipt = ServerTest.stubReceipt(product(.face(3)), transaction: transaction)
                bought = try await client.api(
                    .post, "/api/v1/purchases", uid: "storm",
                    json: ["receipt": receipt, "productId": product(.face(3))])
                deliveries = [
                    ServerTest.stubNotification(
                        .refund, transaction: transaction, product: product(.face(3)), uuid: uuid),
                    ServerTest.stubNotification(
                        .refund, transaction: transaction, product: product(.face(3)), uuid: uuid,
                        signedDateMs: 1_763_100_000_500),
                ]
            }
            #expect(bought.status == .ok, "\(bought.body)")
            let before = try await ledgerRowCounts(db.client)

            // Past the notifications the server verifies at once, it answers 503 (a second late), and Apple
            // sends again: so does this storm.
            let answers = try await Self.storm(client) { index, client in
                var answer: Answer
                repeat {
                    answer = try await client.api(
                        .post, "/api/v1/notifications/app-store", json: ["signedPayload": deliveries[index % 2]])
                } while answer.status == .serviceUnavailable && answer.errorCode == "server_busy"
                return answer
            }
            #expect(answers.allSatisfy { $0.status == .ok }, "\(Set(answers.map { "\($0.status) \($0.body)" }))")
            #expect(answers.count(where: { $0.json["storage"] as? String == "stored" }) == 1)
            #expect(answers.count(where: { $0.json["storage"] as? String == "duplicate" }) == Self.copies - 1)
            #expect(answers.allSatisfy { ["applied", "pending"].contains($0.json["ledger"] as? String) })

            #expect(
                try await Self.count(db, "SELECT count(*) FROM store_notifications WHERE notification_uuid = \(uuid)")
                    == 1)
            #expect(try await Self.count(db, "SELECT count(*) FROM refund_events WHERE source_event_id = \(uuid)") == 1)
            #expect(
                try await Self.count(
                    db, "SELECT count(*) FROM journal_entries WHERE kind = 'refund' AND transaction_id = \(transaction)"
                ) == 1)
            let after = try await ledgerRowCounts(db.client)
            #expect(after["store_notifications"] == before["store_notifications"]! + 1)
            #expect(after["refund_events"] == before["refund_events"]! + 1)
            #expect(after["journal_entries"] == before["journal_entries"]! + 1, "one refund entry, nothing else")
            let me = try await client.api(.get, "/api/v1/me", uid: "storm")
            #expect((me.json["owned"] as? [String: [Int]])?["faces"] == [0], "the refunded face is gone")
            let report = try await Reconciler(client: db.client).run()
            #expect(report.passed, "\(report.text)")
        }
    }

    @Test(
        "the same purchase posted 100 times concurrently by its owner: recorded once, 99 duplicates, on both surfaces")
    func purchaseStormByOwner() async throws {
        try await Self.withStormServer { client, db in
            try await client.signUp("owner")
            let jws = ServerTest.signedTransaction(product(.background(4)), transaction: "2000000777000002")
            let receipt = ServerTest.stubReceipt(product(.background(4)), transaction: "stub-storm-owner")
            let answers = try await Self.storm(client) { index, client in
                if index % 2 == 0 {
                    return try await client.api(
                        .post, "/api/v1/purchases", uid: "owner", json: ["signedTransaction": jws])
                }
                return try await client.sesac(
                    .post, "/v1/user/shop/ios", uid: "owner",
                    form: [("receipt", receipt), ("product", product(.background(4)))])
            }
            #expect(answers.allSatisfy { $0.status == .ok }, "\(Set(answers.map { "\($0.status) \($0.body)" }))")
            let json = answers.filter { $0.json["duplicate"] != nil }
            #expect(json.count == Self.copies / 2)
            #expect(json.count(where: { $0.json["duplicate"] as? Bool == false }) == 1, "one recorded")
            #expect(
                json.count(where: { $0.json["duplicate"] as? Bool == true }) == Self.copies / 2 - 1,
                "the rest duplicates")
            #expect(try await Self.count(db, "SELECT count(*) FROM purchases WHERE uid = 'owner'") == 2)
            #expect(
                try await Self.count(
                    db, "SELECT count(*) FROM journal_entries WHERE uid = 'owner' AND kind = 'purchase'") == 2)
            let grant = try await db.client.query(
                "SELECT purchased_count FROM grants WHERE uid = 'owner' AND item_kind = 'background' AND item_index = 4"
            ).single().decode(Int.self, at: 0)
            #expect(grant == 2, "two transactions of the same item, each counted once")
            let report = try await Reconciler(client: db.client).run()
            #expect(report.passed, "\(report.text)")
        }
    }

    @Test(
        "one transaction posted 100 times concurrently by two users: exactly one owns it, the other is refused every time"
    )
    func purchaseStormByTwoUsers() async throws {
        try await Self.withStormServer { client, db in
            _ = try await client.api(.post, "/api/v1/me", uid: "alice")
            _ = try await client.api(.post, "/api/v1/me", uid: "bob")
            let jws = ServerTest.signedTransaction(product(.face(4)), transaction: "2000000777000003")
            let answers = try await Self.storm(client) { index, client in
                try await client.api(
                    .post, "/api/v1/purchases", uid: index % 2 == 0 ? "alice" : "bob", json: ["signedTransaction": jws])
            }
            let owners = try await db.client.query(
                "SELECT uid FROM purchases WHERE transaction_id = '2000000777000003'"
            )
            .map { try $0.decode(String.self, at: 0) }
            #expect(owners.count == 1)
            let owner = try #require(owners.first)
            let ownerIsAlice = owner == "alice"
            for answer in answers {
                #expect(
                    answer.status == .ok
                        || (answer.status == .conflict && answer.errorCode == "transaction_owned_by_another_user"),
                    "\(answer.body)")
            }
            #expect(answers.count(where: { $0.status == .ok }) == Self.copies / 2, "every post by the owner succeeds")
            #expect(
                answers.count(where: { $0.status == .conflict }) == Self.copies / 2,
                "every post by the other is refused")
            #expect(answers.count(where: { $0.json["duplicate"] as? Bool == false }) == 1)
            let other = ownerIsAlice ? "bob" : "alice"
            let otherMe = try await client.api(.get, "/api/v1/me", uid: other)
            #expect((otherMe.json["owned"] as? [String: [Int]])?["faces"] == [0], "the other user owns nothing")
            #expect(
                try await Self.count(
                    db, "SELECT count(*) FROM journal_entries WHERE transaction_id = '2000000777000003'") == 1)
            let report = try await Reconciler(client: db.client).run()
            #expect(report.passed, "\(report.text)")
        }
    }
}
