import Foundation
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Ledger

/// Thousands of random operation sequences against the real ledger and `LedgerModel`, comparing
/// outcomes and state after every step.
///
/// Environment: `LEDGER_MODEL_SEED=<n>` replays one sequence (printed when one fails);
/// `LEDGER_MODEL_SEQUENCES` (default 1200) and `LEDGER_MODEL_STEPS` (default 16) size the run;
/// `LEDGER_MODEL_BASE_SEED` fixes the run's seeds (random otherwise, printed on failure).
@Suite("Randomized model test")
struct LedgerModelTests {
    @Test(
        "random sequences of register, buy, duplicate, replay, refund, reversal, revoke, equip and learning a price match the model"
    )
    func randomSequences() async throws {
        let environment = ProcessInfo.processInfo.environment
        let steps = environment["LEDGER_MODEL_STEPS"].flatMap { Int($0) } ?? 16
        let seeds: [UInt64]
        if let replay = environment["LEDGER_MODEL_SEED"].flatMap({ UInt64($0) }) {
            seeds = [replay]
        } else {
            let count = environment["LEDGER_MODEL_SEQUENCES"].flatMap { Int($0) } ?? 1200
            var base = environment["LEDGER_MODEL_BASE_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0..<(1 << 40))
            seeds = (0..<count).map { _ in SeededGenerator.step(&base) }
        }
        let workers = 4
        try await withLedger(maximumConnections: 8) { db, ledger in
            let failures = try await withThrowingTaskGroup(of: [String].self) { group in
                for worker in 0..<workers {
                    group.addTask {
                        var failures: [String] = []
                        for index in stride(from: worker, to: seeds.count, by: workers) {
                            do {
                                var sequence = ModelSequence(
                                    seed: seeds[index], steps: steps, ledger: ledger, client: db.client)
                                try await sequence.run()
                            } catch {
                                failures.append("\(error)")
                                break
                            }
                        }
                        return failures
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            for failure in failures { Issue.record(Comment(rawValue: failure)) }
            let purchases = try await scalar(db.client, "SELECT count(*) FROM purchases")
            #expect(purchases >= (seeds.count == 1 ? 0 : seeds.count), "the sequences recorded purchases")
        }
    }
}

extension SeededGenerator {
    /// The next seed of a run (SplitMix64 over the base).
    static func step(_ base: inout UInt64) -> UInt64 {
        var generator = SeededGenerator(seed: base)
        let value = generator.next()
        base = generator.state
        return value >> 1
    }
}

/// A mismatch between the ledger and the model, with what it takes to replay it.
struct ModelMismatch: Error, CustomStringConvertible {
    let seed: UInt64
    let step: Int
    let operations: [String]
    let message: String
    var description: String {
        """
        model mismatch in sequence \(seed) at step \(step): \(message)
        operations so far:
        \(operations.enumerated().map { "  \($0.offset): \($0.element)" }.joined(separator: "\n"))
        replay: LEDGER_MODEL_SEED=\(seed) .build/debug/<Package>PackageTests.xctest --testing-library swift-testing --filter LedgerModelTests
        """
    }
}

/// One random sequence in a namespace of its own (uids and ids prefixed by its seed).
struct ModelSequence {
    let seed: UInt64
    let steps: Int
    let ledger: LedgerStore
    let client: PostgresClient
    var random: SeededGenerator
    var model = LedgerModel()
    var operations: [String] = []
    var clock = 1000
    var counter = 0
    let users: [String]
    /// Keys that refund events named before any purchase, for a later purchase to pick up.
    var unbought: [LedgerModel.Key] = []

    init(seed: UInt64, steps: Int, ledger: LedgerStore, client: PostgresClient) {
        self.seed = seed
        self.steps = steps
        self.ledger = ledger
        self.client = client
        self.random = SeededGenerator(seed: seed)
        self.users = (0..<3).map { "s\(seed)-u\($0)" }
    }

    func fail(_ message: String) -> ModelMismatch {
        ModelMismatch(seed: seed, step: operations.count - 1, operations: operations, message: message)
    }

    func expect<T: Equatable>(_ actual: T, _ expected: T, _ what: String) throws {
        if actual != expected { throw fail("\(what): ledger \(actual), model \(expected)") }
    }

    mutating func run() async throws {
        for _ in 0..<steps {
            try await step()
            try await compareState()
        }
    }

    mutating func nextId(_ prefix: String) -> String {
        counter += 1
        return "s\(seed)-\(prefix)\(counter)"
    }

    mutating func pick<T>(_ values: [T]) -> T? {
        values.isEmpty ? nil : values[Int.random(in: 0..<values.count, using: &random)]
    }

    var registered: [String] { users.filter { model.equipped[$0] != nil } }
    var bought: [LedgerModel.Key] { model.purchases.keys.sorted { $0.transactionId < $1.transactionId } }

    mutating func randomKey() -> LedgerModel.Key {
        let roll = Int.random(in: 0..<100, using: &random)
        let (store, environment): (VerifiedTransaction.Store, StoreEnvironment) =
            roll < 70 ? (.appStore, .production) : roll < 85 ? (.appStore, .sandbox) : (.stub, .stub)
        return LedgerModel.Key(store: store, environment: environment, transactionId: nextId("t"))
    }

    mutating func step() async throws {
        let roll = Int.random(in: 0..<100, using: &random)
        switch roll {
        case 0..<12: try await register()
        case 12..<40: try await buy()
        case 40..<46: try await resubmit()
        case 46..<51: try await replayFromAnotherUser()
        case 51..<54: try await alterEvidence()
        case 54..<80: try await refundEvent()
        case 80..<85: try await resendEvent()
        case 85..<93: try await equip()
        case 93..<97: try await learnPrice()
        default: try await unknownProduct()
        }
    }

    // MARK: Operations

    mutating func register() async throws {
        let uid = pick(users)!
        operations.append("register \(uid)")
        let outcome = try await ledger.register(uid: uid, profile: testProfile)
        try expect(outcome, model.equipped[uid] == nil ? .registered : .alreadyRegistered, "register")
        if model.equipped[uid] == nil { model.equipped[uid] = .initial }
    }

    func transaction(for purchase: LedgerModel.PurchaseFact) -> VerifiedTransaction {
        var transaction = makeTransaction(
            purchase.key.transactionId, item: purchase.item, store: purchase.key.store,
            environment: purchase.key.environment,
            price: purchase.price?.amountMilli, unpriced: purchase.price == nil,
            currency: purchase.price?.currency ?? "KRW",
            ownership: purchase.shared ? .familyShared : .purchased, evidence: purchase.evidence)
        transaction.currency = purchase.price?.currency
        return transaction
    }

    mutating func buy() async throws {
        let uid = pick(users)!
        let key: LedgerModel.Key
        if Bool.random(using: &random), let parked = pick(unbought) {
            key = parked
        } else {
            key = randomKey()
        }
        let item: ItemID =
            Bool.random(using: &random)
            ? .face(Int.random(in: 1...4, using: &random)) : .background(Int.random(in: 1...7, using: &random))
        let priceRoll = Int.random(in: 0..<10, using: &random)
        let price: Money? =
            priceRoll == 0
            ? nil
            : Money(amountMilli: priceRoll == 1 ? 0 : catalogPrice(item), currency: priceRoll == 2 ? "USD" : "KRW")
        let shared = Int.random(in: 0..<100, using: &random) < 15
        let purchase = LedgerModel.PurchaseFact(
            uid: uid, item: item, shared: shared, price: price, evidence: "v1", key: key)
        operations.append(
            "buy \(key) \(item) for \(uid), shared \(shared), price \(price.map { "\($0.amountMilli) \($0.currency)" } ?? "none")"
        )

        guard model.equipped[uid] != nil else {
            do {
                _ = try await ledger.recordPurchase(transaction(for: purchase), for: uid)
                throw fail("an unregistered user's purchase was accepted")
            } catch let error as LedgerError {
                try expect(error.code, .userNotRegistered, "purchase by unregistered user")
            }
            return
        }
        let outcome = try await ledger.recordPurchase(transaction(for: purchase), for: uid)
        model.purchases[key] = purchase
        unbought.removeAll { $0 == key }
        model.settle(key)
        guard case .recorded(let recorded) = outcome else {
            throw fail("purchase outcome \(outcome), expected recorded")
        }
        try expect(recorded.state, model.purchases[key]!.state, "state of the new purchase")
        try expect(recorded.item, item, "item")
    }

    mutating func resubmit() async throws {
        guard let key = pick(bought) else { return }
        let purchase = model.purchases[key]!
        operations.append("resubmit \(key) by its owner \(purchase.uid)")
        let outcome = try await ledger.recordPurchase(transaction(for: purchase), for: purchase.uid)
        guard case .duplicate(let stored) = outcome else {
            throw fail("resubmission outcome \(outcome), expected duplicate")
        }
        try expect(stored.state, purchase.state, "duplicate's state")
        try expect(stored.uid, purchase.uid, "duplicate's owner")
    }

    mutating func replayFromAnotherUser() async throws {
        guard let key = pick(bought) else { return }
        let purchase = model.purchases[key]!
        guard let thief = pick(registered.filter { $0 != purchase.uid }) else { return }
        operations.append("replay \(key) by \(thief)")
        try expect(
            try await ledger.recordPurchase(transaction(for: purchase), for: thief), .conflict(.ownedByAnotherUser),
            "replay")
    }

    mutating func alterEvidence() async throws {
        guard let key = pick(bought) else { return }
        var purchase = model.purchases[key]!
        purchase.evidence = "v2"
        // Other evidence saying the same (the store re-signed it) is a duplicate; saying something else
        // about the purchase (another product) is a conflict.
        if Bool.random(using: &random) {
            operations.append("resubmit \(key) re-signed")
            let outcome = try await ledger.recordPurchase(transaction(for: purchase), for: purchase.uid)
            guard case .duplicate(let stored) = outcome else {
                throw fail("re-signed outcome \(outcome), expected duplicate")
            }
            try expect(stored.state, purchase.state, "re-signed duplicate's state")
            return
        }
        operations.append("resubmit \(key) with other evidence for another product")
        var altered = transaction(for: purchase)
        altered.productId = productId(purchase.item.kind == .face ? .background(1) : .face(1))
        try expect(
            try await ledger.recordPurchase(altered, for: purchase.uid), .conflict(.differentEvidence),
            "altered evidence")
    }

    mutating func refundEvent() async throws {
        let key: LedgerModel.Key
        let roll = Int.random(in: 0..<100, using: &random)
        if roll < 70, let existing = pick(bought) {
            key = existing
        } else if roll < 85, let parked = pick(unbought) {
            key = parked
        } else {
            key = randomKey()
            unbought.append(key)
        }
        let kindRoll = Int.random(in: 0..<10, using: &random)
        let kind: RefundEvent.Kind = kindRoll < 5 ? .refund : kindRoll < 8 ? .refundReversal : .familyRevoke
        // Mostly in order; sometimes an older event arrives late.
        clock += 10
        let second = Int.random(in: 0..<5, using: &random) == 0 ? clock - Int.random(in: 1...60, using: &random) : clock
        let event = LedgerModel.Event(id: nextId("e"), kind: kind, key: key, second: second)
        operations.append("event \(event.id) \(kind) for \(key) at \(second)")
        let outcome = try await ledger.recordRefundEvent(
            makeRefundEvent(
                event.id, kind, for: key.transactionId, environment: key.environment, store: key.store, second: second))
        model.events[event.id] = event
        model.eventsByKey[key, default: []].append(event)
        model.settle(key)
        try expect(outcome, model.purchases[key].map { .applied($0.state) } ?? .parked, "refund event outcome")
    }

    mutating func resendEvent() async throws {
        guard let id = pick(model.events.keys.sorted()) else { return }
        let event = model.events[id]!
        let conflicting = Bool.random(using: &random)
        let kind: RefundEvent.Kind = conflicting ? (event.kind == .refund ? .refundReversal : .refund) : event.kind
        operations.append("resend event \(id) as \(kind)")
        let outcome = try await ledger.recordRefundEvent(
            makeRefundEvent(
                id, kind, for: event.key.transactionId, environment: event.key.environment, store: event.key.store,
                second: event.second))
        try expect(outcome, conflicting ? .conflict : .duplicate(model.purchases[event.key]?.state), "resent event")
    }

    /// The store's signed price for a recorded purchase: booked once for an unpriced bought purchase
    /// (whatever its state), a duplicate or conflict for a priced one, nothing for a family-shared one.
    mutating func learnPrice() async throws {
        guard let key = pick(bought) else { return }
        var purchase = model.purchases[key]!
        let stated = Money(
            amountMilli: Bool.random(using: &random) ? catalogPrice(purchase.item) : 990, currency: "KRW")
        operations.append("learn price \(stated.amountMilli) \(stated.currency) for \(key)")
        var signed = transaction(for: purchase)
        signed.priceMilli = stated.amountMilli
        signed.currency = stated.currency
        signed.evidenceSHA256 = fakeDigest("learned/\(key)")
        let outcome = try await ledger.recordLearnedPrice(signed)
        let expected: PriceOutcome
        if purchase.shared {
            expected = .familyShared
        } else if let known = purchase.price {
            expected = known == stated ? .duplicate(known) : .conflict(recorded: known, stated: stated)
        } else {
            expected = .recorded(stated)
            purchase.price = stated
            purchase.entries += 1
            model.purchases[key] = purchase
        }
        try expect(outcome, expected, "learned price")
    }

    mutating func equip() async throws {
        let uid = pick(users)!
        let face = Int.random(in: 0...5, using: &random)
        let background = Int.random(in: 0...8, using: &random)
        operations.append("equip face \(face) background \(background) for \(uid)")
        do {
            let outcome = try await ledger.equip(face: face, background: background, for: uid)
            guard model.equipped[uid] != nil, face <= 4, background <= 7 else {
                throw fail("equip succeeded: \(outcome)")
            }
            let notOwned = [ItemID.face(face), .background(background)].filter { !model.owns(uid, $0) }
            if notOwned.isEmpty {
                model.equipped[uid] = EquippedItems(face: face, background: background)
                try expect(outcome, .equipped(model.equipped[uid]!), "equip")
            } else {
                try expect(outcome, .notOwned(notOwned), "equip")
            }
        } catch let error as LedgerError {
            let expected: LedgerError.Code = model.equipped[uid] == nil ? .userNotRegistered : .noSuchItem
            try expect(error.code, expected, "equip error")
            if expected == .noSuchItem && face <= 4 && background <= 7 { throw fail("no_such_item for existing items") }
        }
    }

    mutating func unknownProduct() async throws {
        guard let uid = pick(registered) else { return }
        operations.append("buy an unknown product for \(uid)")
        do {
            _ = try await ledger.recordPurchase(
                makeTransaction(nextId("t"), productId: "com.example.unknown"), for: uid)
            throw fail("an unknown product was accepted")
        } catch let error as LedgerError {
            try expect(error.code, .unknownProduct, "unknown product")
        }
    }

    // MARK: Comparing state

    /// One round trip reads this sequence's users, grants, purchases and money; each is compared
    /// with the model as sorted lines.
    func compareState() async throws {
        let ids = model.purchases.keys.map(\.transactionId) + unbought.map(\.transactionId)
        let row = try await client.query(
            """
            SELECT
                ARRAY(SELECT uid || ' ' || equipped_face || ' ' || equipped_background FROM users
                      WHERE uid = ANY(\(users)) ORDER BY 1),
                ARRAY(SELECT uid || ' ' || item_kind || ' ' || item_index || CASE WHEN free THEN ' free' ELSE '' END
                             || ' ' || purchased_count || ' ' || shared_count
                      FROM grants WHERE uid = ANY(\(users)) AND (free OR purchased_count + shared_count > 0) ORDER BY 1),
                ARRAY(SELECT p.transaction_id || ' ' || \(unsafeSQL: Purchase.stateExpression) || ' '
                             || (SELECT count(*) FROM journal_entries j WHERE j.transaction_id = p.transaction_id)
                      FROM purchases p WHERE p.uid = ANY(\(users)) ORDER BY 1),
                ARRAY(SELECT account || ' ' || currency || ' ' || sum(amount_milli) FROM postings
                      WHERE transaction_id = ANY(\(ids))
                      GROUP BY account, currency HAVING sum(amount_milli) <> 0 ORDER BY 1)
            """
        ).single()
        let (users, grants, purchases, money) = try row.decode(([String], [String], [String], [String]).self)
        try expect(
            users.sorted(), model.equipped.map { "\($0.key) \($0.value.face) \($0.value.background)" }.sorted(),
            "users and equipped items")
        let free = model.equipped.keys.flatMap { ["\($0) face 0 free 0 0", "\($0) background 0 free 0 0"] }
        let counts = model.grantCounts().map { "\($0.key) \($0.value[0]) \($0.value[1])" }
        try expect(grants.sorted(), (free + counts).sorted(), "grants")
        try expect(
            purchases.sorted(),
            model.purchases.values.map { "\($0.key.transactionId) \($0.state.rawValue) \($0.entries)" }.sorted(),
            "purchase states and journal entry counts")
        try expect(money.sorted(), model.balances().map { "\($0.key) \($0.value)" }.sorted(), "balances")
    }
}
