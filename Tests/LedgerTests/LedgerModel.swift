import Foundation
import Receipts

@testable import Ledger

/// A deliberately simple in-memory model of the ledger's rules, the oracle for the randomized test:
/// who owns what, which state each purchase is in, which account holds how much money.
struct LedgerModel {
    struct Key: Hashable, CustomStringConvertible {
        var store: VerifiedTransaction.Store
        var environment: StoreEnvironment
        var transactionId: String
        var description: String { "\(store)/\(environment)/\(transactionId)" }
    }

    struct PurchaseFact {
        var uid: String
        var item: ItemID
        var shared: Bool
        var price: Money?
        var evidence: String
        var book: String { LedgerBook.name(store: key.store, environment: key.environment) }
        var key: Key
        /// Journal entries expected for it: the purchase plus each state change.
        var entries = 1
        var state: PurchaseState = .live
    }

    struct Event {
        var id: String
        var kind: RefundEvent.Kind
        var key: Key
        var second: Int
    }

    var equipped: [String: EquippedItems] = [:]
    var purchases: [Key: PurchaseFact] = [:]
    var events: [String: Event] = [:]
    var eventsByKey: [Key: [Event]] = [:]

    // MARK: Rules

    /// The state a purchase's events call for: the latest refund or reversal by signed date (then
    /// arrival) decides; a family revoke of a family-shared purchase is final.
    func targetState(of key: Key) -> PurchaseState {
        guard let purchase = purchases[key] else { return .live }
        let events = eventsByKey[key] ?? []
        if purchase.shared && events.contains(where: { $0.kind == .familyRevoke }) { return .revoked }
        // `events` is in arrival order, so the last maximum by second is the latest arrival among ties.
        let decisive = events.filter { $0.kind != .familyRevoke }.enumerated()
            .max { ($0.element.second, $0.offset) < ($1.element.second, $1.offset) }?.element
        return decisive?.kind == .refund ? .refunded : .live
    }

    func owns(_ uid: String, _ item: ItemID) -> Bool {
        item.isFree || purchases.values.contains { $0.uid == uid && $0.item == item && $0.state == .live }
    }

    /// Applies the events to a purchase (one journal entry when its state changes), then
    /// un-equips whatever its owner no longer owns.
    mutating func settle(_ key: Key) {
        guard var purchase = purchases[key] else { return }
        let target = targetState(of: key)
        if target != purchase.state && purchase.state != .revoked {
            purchase.state = target
            purchase.entries += 1
            purchases[key] = purchase
        }
        if var shown = equipped[purchase.uid] {
            if !owns(purchase.uid, .face(shown.face)) { shown.face = 0 }
            if !owns(purchase.uid, .background(shown.background)) { shown.background = 0 }
            equipped[purchase.uid] = shown
        }
    }

    // MARK: Derived views, compared with the database

    /// `uid kind index` → (purchased, shared) counts of live purchases, for non-zero ones.
    func grantCounts() -> [String: [Int]] {
        var counts: [String: [Int]] = [:]
        for purchase in purchases.values where purchase.state == .live {
            let id = "\(purchase.uid) \(purchase.item.kind.rawValue) \(purchase.item.index)"
            var pair = counts[id] ?? [0, 0]
            pair[purchase.shared ? 1 : 0] += 1
            counts[id] = pair
        }
        return counts
    }

    /// `account currency` → non-zero balance in milli.
    func balances() -> [String: Int64] {
        var result: [String: Int64] = [:]
        func add(_ name: String, _ purchase: PurchaseFact, _ amount: Int64) {
            let id = LedgerBook.account(name, book: purchase.book) + " " + purchase.price!.currency
            result[id, default: 0] += amount
        }
        for purchase in purchases.values {
            guard !purchase.shared, let price = purchase.price, price.amountMilli > 0 else { continue }
            add("revenue:\(purchase.item.kind.rawValue)", purchase, -price.amountMilli)
            switch purchase.state {
            case .live: add("receivable:\(purchase.key.store.rawValue)", purchase, price.amountMilli)
            case .refunded: add("refunds:\(purchase.item.kind.rawValue)", purchase, price.amountMilli)
            case .revoked: break
            }
        }
        return result.filter { $0.value != 0 }
    }
}
