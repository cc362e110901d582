import AppStoreServerAPI
import Foundation
import HTTPTypes
import HummingbirdTesting
import Ledger
import Postgres
import Receipts
import ShopServer
import TestSupport
import Testing

/// Restore hands over a customer's history only to whoever proves it is theirs: a signed transaction or
/// a classic receipt from the device, or a caller who already owns part of that history (in its
/// environment). An appAccountToken is chosen by the app, so it proves nothing. Through a real server, against the fake Apple, on a real PostgreSQL.
@Suite("AppStoreServerAPI uses: restore needs proof of ownership")
struct RestoreProofTests {
    typealias Transaction = FakeAppStore.Transaction

    static let aliceToken = "5b2b6a5e-54b5-4d1c-9c4f-0d6a1b4f2e11"

    /// alice-apple bought three items (with the app's appAccountToken for alice); bob-apple one.
    static func shop() -> FakeAppStore {
        let fake = APITest.fake(pageSize: 2)
        for (index, id) in ["1001", "1002", "1003"].enumerated() {
            fake.add(
                Transaction(
                    id: id, productId: APITest.product(index + 2), customer: "alice-apple",
                    purchaseMs: 1_763_000_000_001 + Int64(index), appAccountToken: aliceToken))
        }
        fake.add(Transaction(id: "2001", productId: APITest.product(2), customer: "bob-apple"))
        return fake
    }

    static func restore(
        _ client: any TestClientProtocol, uid: String, _ body: [String: String]
    ) async throws
        -> ShopAnswer
    {
        try await client.api(.post, "/api/v1/purchases/restore", uid: uid, json: body)
    }

    static func purchases(_ db: TestDatabase) async throws -> [String: String] {
        var owners: [String: String] = [:]
        for row in try await db.client.query("SELECT transaction_id, uid FROM purchases") {
            let (id, uid) = try row.decode((String, String).self)
            owners[id] = uid
        }
        return owners
    }

    static func accountToken(_ db: TestDatabase, _ uid: String) async throws -> UUID? {
        try await db.client.query("SELECT app_account_token FROM users WHERE uid = \(uid)::text").single()
            .decode(UUID?.self, at: 0)
    }

    @Test("A fresh account naming another customer's transaction id: 403 proof_required, nothing written or adopted")
    func strangerNamingAnId() async throws {
        let fake = Self.shop()
        try await RestoreAndSyncTests().withShop(fake) { client, db, _ in
            let stolen = try await Self.restore(client, uid: "bob", ["transactionId": "1001"])
            #expect(stolen.status == .forbidden && stolen.errorCode == "proof_required", "\(stolen.body)")
            #expect(try await Self.purchases(db).isEmpty)
            #expect(try await Self.accountToken(db, "bob") == nil)

            // The owner, with a transaction from her device: her whole history, each purchase once.
            let signed = fake.signedTransaction("1002")
            let owner = try await Self.restore(client, uid: "alice", ["signedTransaction": signed])
            #expect(owner.status == .ok, "\(owner.body)")
            #expect(owner.outcomes == ["1001": "recorded", "1002": "recorded", "1003": "recorded"])
            let again = try await Self.restore(client, uid: "alice", ["signedTransaction": signed])
            #expect(again.outcomes == ["1001": "duplicate", "1002": "duplicate", "1003": "duplicate"])
            #expect(try await Self.purchases(db) == ["1001": "alice", "1002": "alice", "1003": "alice"])
            // Restore never adopts a token: alice's account carries none until the app buys with one.
            #expect(try await Self.accountToken(db, "alice") == nil)
        }
    }

    @Test("The owner with a classic receipt from her device: her whole history, each purchase once")
    func ownerWithClassicReceipt() async throws {
        let fake = Self.shop()
        let receipt = TestReceiptPKI.shared.receipt(
            TestReceipt(
                bundleId: APITest.bundleId,
                purchases: [
                    TestReceipt.Purchase(
                        productId: APITest.product(3), transactionId: "1002", purchaseDate: "2025-11-13T02:13:20Z")
                ]))
        try await RestoreAndSyncTests().withShop(fake) { client, db, _ in
            let first = try await Self.restore(client, uid: "alice", ["receipt": receipt])
            #expect(first.status == .ok, "\(first.body)")
            #expect(first.outcomes == ["1001": "recorded", "1002": "recorded", "1003": "recorded"])
            let again = try await Self.restore(client, uid: "alice", ["receipt": receipt])
            #expect(again.outcomes == ["1001": "duplicate", "1002": "duplicate", "1003": "duplicate"])
            #expect(try await Self.purchases(db) == ["1001": "alice", "1002": "alice", "1003": "alice"])
            // Another account on the same device: the purchases stay with their first owner.
            let other = try await Self.restore(client, uid: "bob", ["receipt": receipt])
            #expect(other.status == .conflict && other.errorCode == "transaction_owned_by_another_user")
            #expect(try await Self.purchases(db).count == 3)
        }
    }

    @Test("A bare transaction id: accepted from who owns part of that history, in its environment; a token is no proof")
    func bareIdOnlyWhenOwned() async throws {
        let fake = Self.shop()
        // carol-apple: another Apple ID of alice's, bought through the app with alice's appAccountToken.
        fake.add(
            Transaction(
                id: "3001", productId: APITest.product(1), customer: "carol-apple", appAccountToken: Self.aliceToken))
        try await RestoreAndSyncTests().withShop(fake) { client, db, _ in
            // alice buys 1001 in the app (StoreKit 2): now she owns part of alice-apple's history.
            let bought = try await client.api(
                .post, "/api/v1/purchases", uid: "alice", json: ["signedTransaction": fake.signedTransaction("1001")])
            #expect(bought.status == .ok, "\(bought.body)")
            #expect(try await Self.accountToken(db, "alice") == UUID(uuidString: Self.aliceToken))
            let rest = try await Self.restore(client, uid: "alice", ["transactionId": "1003"])
            #expect(rest.outcomes == ["1001": "duplicate", "1002": "recorded", "1003": "recorded"], "\(rest.body)")
            // carol-apple's history carries alice's token, which the app chose: that proves nothing. From
            // the device (a signed transaction of carol-apple's) it is hers.
            let byToken = try await Self.restore(client, uid: "alice", ["transactionId": "3001"])
            #expect(byToken.status == .forbidden && byToken.errorCode == "proof_required", "\(byToken.body)")
            let proven = try await Self.restore(
                client, uid: "alice", ["signedTransaction": fake.signedTransaction("3001")])
            #expect(proven.outcomes == ["3001": "recorded"], "\(proven.body)")
            // bob owns nothing of alice-apple's history: refused.
            #expect(
                try await Self.restore(client, uid: "bob", ["signedTransaction": fake.signedTransaction("2001")])
                    .status == .ok)
            let foreign = try await Self.restore(client, uid: "bob", ["transactionId": "1002"])
            #expect(foreign.status == .forbidden && foreign.errorCode == "proof_required", "\(foreign.body)")
            #expect(try await Self.purchases(db)["2001"] == "bob")
            #expect(try await Self.purchases(db).filter { $0.value == "bob" }.count == 1)
        }
    }

    @Test(
        "A free Sandbox purchase carrying the victim's appAccountToken does not let a bare id restore the victim's production purchase"
    )
    func sharedTokenIsNoProof() async throws {
        let fake = Self.shop()
        // The attacker's own free Sandbox purchase, made with alice's token (a StoreKit purchase option the
        // app, or the attacker, chooses).
        fake.add(
            Transaction(
                id: "9001", productId: APITest.product(1), customer: "mallory-sandbox", environment: .sandbox,
                appAccountToken: Self.aliceToken))
        try await RestoreAndSyncTests().withShop(fake) { client, db, _ in
            let sandbox = try await client.api(
                .post, "/api/v1/purchases", uid: "bob", json: ["signedTransaction": fake.signedTransaction("9001")])
            #expect(sandbox.status == .ok, "\(sandbox.body)")
            #expect(try await Self.accountToken(db, "bob") == UUID(uuidString: Self.aliceToken))
            let theft = try await Self.restore(client, uid: "bob", ["transactionId": "1001"])
            #expect(theft.status == .forbidden && theft.errorCode == "proof_required", "\(theft.body)")
            #expect(try await Self.purchases(db) == ["9001": "bob"], "nothing of alice-apple's history recorded")
            // The victim posts her own purchase later: hers.
            let victim = try await client.api(
                .post, "/api/v1/purchases", uid: "alice", json: ["signedTransaction": fake.signedTransaction("1001")])
            #expect(victim.status == .ok, "\(victim.body)")
        }
    }

    @Test("Restore asks for one proof: none, or two at once, is a 400")
    func oneProof() async throws {
        try await RestoreAndSyncTests().withShop(Self.shop()) { client, _, _ in
            let none = try await Self.restore(client, uid: "alice", [:])
            #expect(none.status == .badRequest, "\(none.body)")
            let two = try await Self.restore(
                client, uid: "alice", ["transactionId": "1001", "signedTransaction": "x.y.z"])
            #expect(two.status == .badRequest, "\(two.body)")
            let forged = try await Self.restore(client, uid: "alice", ["signedTransaction": "x.y.z"])
            #expect(forged.status == .unprocessableContent, "\(forged.body)")
        }
    }
}
