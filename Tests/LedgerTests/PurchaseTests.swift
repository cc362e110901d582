import Foundation
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Ledger

@Suite("Recording purchases")
struct PurchaseTests {
    @Test("a purchase writes the purchase, one balanced entry, the grant and its history")
    func recordsPurchase() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            let outcome = try await ledger.recordPurchase(makeTransaction("1000", item: .background(4)), for: "alice")
            let purchase = try #require(outcome.purchase)
            #expect(outcome.isRecorded)
            #expect(purchase.item == .background(4))
            #expect(purchase.book == "production")
            #expect(purchase.price == Money(amountMilli: 2_500_000, currency: "KRW"))
            #expect(purchase.state == .live)

            #expect(
                try await balances(db.client) == ["receivable:app_store": 2_500_000, "revenue:background": -2_500_000])
            #expect(try await scalar(db.client, "SELECT count(*) FROM journal_entries WHERE kind = 'purchase'") == 1)
            let inventory = try await ledger.inventory(of: "alice")
            #expect(inventory.backgrounds == [0, 4])
            #expect(inventory.faces == [0])
            #expect(try await ledger.transactionIds(of: "alice") == ["1000"])
            let history = try await ledger.purchaseHistory(of: "alice")
            #expect(history.count == 1)
            #expect(history.first?.transactionId == "1000")
            #expect(history.first?.recordedAt == purchase.recordedAt)
            #expect(history.first?.evidenceSHA256Hex == purchase.evidenceSHA256Hex)
        }
    }

    @Test("posting the same transaction again returns the stored purchase and writes nothing")
    func duplicate() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            let first = try await ledger.recordPurchase(makeTransaction("1001"), for: "alice")
            let before = try await ledgerRowCounts(db.client)
            let again = try await ledger.recordPurchase(makeTransaction("1001"), for: "alice")
            #expect(again.isDuplicate)
            #expect(again.purchase == first.purchase)
            #expect(try await ledgerRowCounts(db.client) == before)
        }
    }

    @Test("another user's transaction, or the same id with other evidence, is a conflict that writes nothing")
    func conflicts() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.register(uid: "mallory", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("1002", item: .face(3)), for: "alice")
            let before = try await ledgerRowCounts(db.client)

            let stolen = try await ledger.recordPurchase(makeTransaction("1002", item: .face(3)), for: "mallory")
            #expect(stolen.conflict == .ownedByAnotherUser)
            // Other evidence that says something else about the purchase (here its price).
            let altered = try await ledger.recordPurchase(
                makeTransaction("1002", item: .face(3), price: 1, evidence: "v2"), for: "alice")
            #expect(altered.conflict == .differentEvidence)
            var otherProduct = makeTransaction("1002", item: .face(3), evidence: "v3")
            otherProduct.productId = productId(.face(4))
            #expect(try await ledger.recordPurchase(otherProduct, for: "alice").conflict == .differentEvidence)

            #expect(try await ledgerRowCounts(db.client) == before)
            #expect(try await ledger.inventory(of: "mallory").faces == [0])
        }
    }

    @Test("the store re-signing a transaction (new signedDate, other evidence bytes, same content) is a duplicate")
    func resignedTransactionIsDuplicate() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            let first = try await ledger.recordPurchase(makeTransaction("1004", item: .background(2)), for: "alice")
            let before = try await ledgerRowCounts(db.client)
            var resigned = makeTransaction("1004", item: .background(2), evidence: "fetched-again")
            resigned.signedDate = resigned.signedDate.addingTimeInterval(86_400)
            let again = try await ledger.recordPurchase(resigned, for: "alice")
            #expect(again.isDuplicate)
            #expect(again.purchase == first.purchase)
            #expect(try await ledgerRowCounts(db.client) == before)
        }
    }

    @Test("the same transaction id in another environment or store is another purchase")
    func keyIncludesStoreAndEnvironment() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            #expect(try await ledger.recordPurchase(makeTransaction("1003"), for: "alice").isRecorded)
            #expect(
                try await ledger.recordPurchase(makeTransaction("1003", environment: .sandbox), for: "alice").isRecorded
            )
            #expect(
                try await ledger.recordPurchase(makeTransaction("1003", store: .stub, environment: .stub), for: "alice")
                    .isRecorded)
            #expect(try await scalar(db.client, "SELECT count(*) FROM purchases") == 3)
        }
    }

    @Test("sandbox, xcode and stub money stays in their own accounts, never production revenue")
    func booksAreSeparate() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(
                makeTransaction("s1", item: .face(1), environment: .sandbox), for: "alice")
            _ = try await ledger.recordPurchase(
                makeTransaction("x1", item: .face(2), environment: .xcode), for: "alice")
            _ = try await ledger.recordPurchase(
                makeTransaction("st1", item: .background(1), store: .stub, environment: .stub), for: "alice")
            #expect(
                try await balances(db.client) == [
                    "sandbox:receivable:app_store": 1_200_000, "sandbox:revenue:face": -1_200_000,
                    "xcode:receivable:app_store": 2_500_000, "xcode:revenue:face": -2_500_000,
                    "stub:receivable:stub": 1_200_000, "stub:revenue:background": -1_200_000,
                ])
            #expect(try await ledger.inventory(of: "alice").faces == [0, 1, 2])
        }
    }

    @Test("a family-shared purchase grants the item and posts no money; an unpriced one posts nothing either")
    func familySharedAndUnpriced() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "kid", profile: testProfile)
            let shared = try await ledger.recordPurchase(
                makeTransaction("f1", item: .face(4), ownership: .familyShared), for: "kid")
            #expect(shared.purchase?.ownershipType == .familyShared)
            let unpriced = try await ledger.recordPurchase(
                makeTransaction("u1", item: .face(2), unpriced: true), for: "kid")
            #expect(unpriced.purchase?.price == nil)
            #expect(try await ledger.inventory(of: "kid").faces == [0, 2, 4])
            #expect(try await scalar(db.client, "SELECT count(*) FROM journal_entries") == 2)
            #expect(try await scalar(db.client, "SELECT count(*) FROM postings") == 0)
            #expect(
                try await scalar(db.client, "SELECT shared_count FROM grants WHERE uid = 'kid' AND item_index = 4") == 1
            )
        }
    }

    @Test("an unknown product, an unregistered user and malformed input are refused and write nothing")
    func refusals() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            let before = try await ledgerRowCounts(db.client)

            let unknown = try await #require(throws: LedgerError.self) {
                try await ledger.recordPurchase(makeTransaction("2000", productId: "com.example.other"), for: "alice")
            }
            #expect(unknown.code == .unknownProduct)
            let unregistered = try await #require(throws: LedgerError.self) {
                try await ledger.recordPurchase(makeTransaction("2001"), for: "stranger")
            }
            #expect(unregistered.code == .userNotRegistered)

            var malformed: [VerifiedTransaction] = []
            var noCurrency = makeTransaction("2002")
            noCurrency.currency = nil
            malformed.append(noCurrency)
            var badCurrency = makeTransaction("2003")
            badCurrency.currency = "krw"
            malformed.append(badCurrency)
            malformed.append(makeTransaction("2004", price: -1))
            var shortDigest = makeTransaction("2005")
            shortDigest.evidenceSHA256 = [1, 2, 3]
            malformed.append(shortDigest)
            malformed.append(makeTransaction(""))
            malformed.append(makeTransaction("2006", environment: StoreEnvironment(rawValue: "PRODUCTION")))
            malformed.append(makeTransaction("2007", environment: StoreEnvironment(rawValue: "Sand box")))
            var oddOwnership = makeTransaction("2008")
            oddOwnership.ownershipType = OwnershipType(rawValue: "BORROWED")
            malformed.append(oddOwnership)
            for transaction in malformed {
                let error = try await #require(throws: LedgerError.self) {
                    try await ledger.recordPurchase(transaction, for: "alice")
                }
                #expect(error.code == .invalidInput, "\(transaction.transactionId): \(error)")
            }
            #expect(try await ledgerRowCounts(db.client) == before)
        }
    }

    @Test("two purchases of one item count twice in the grant, and history lists both")
    func twoPurchasesOfOneItem() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("3001", item: .face(2)), for: "alice")
            _ = try await ledger.recordPurchase(makeTransaction("3002", item: .face(2)), for: "alice")
            #expect(
                try await scalar(db.client, "SELECT purchased_count FROM grants WHERE uid = 'alice' AND item_index = 2")
                    == 2)
            #expect(try await ledger.transactionIds(of: "alice") == ["3001", "3002"])
            #expect(try await balances(db.client)["revenue:face"] == -5_000_000)
        }
    }
}
