import Ledger

/// Identifies a report line within a period: a book and currency, then optionally a kind, then
/// optionally an item index. `kind == nil` is the currency's total, `index == nil` a kind's total.
public struct RevenueLineKey: Sendable, Hashable, Comparable {
    public enum Level: String, Sendable {
        case item
        case kind
        case currency
    }

    public var book: String
    public var currency: String
    public var kind: ItemKind?
    public var index: Int?

    public init(book: String, currency: String, kind: ItemKind? = nil, index: Int? = nil) {
        self.book = book
        self.currency = currency
        self.kind = kind
        self.index = kind == nil ? nil : index
    }

    public var level: Level { kind == nil ? .currency : index == nil ? .kind : .item }

    /// The report's order: production first, then the other books by name; currencies by code;
    /// faces before backgrounds; items by index, each kind's total after its items, the currency's
    /// total last.
    public static func < (lhs: RevenueLineKey, rhs: RevenueLineKey) -> Bool {
        (ReportOrder.book(lhs.book), lhs.currency, ReportOrder.kind(lhs.kind), lhs.index ?? Int.max)
            < (ReportOrder.book(rhs.book), rhs.currency, ReportOrder.kind(rhs.kind), rhs.index ?? Int.max)
    }
}

/// Identifies a line of grants without revenue: book, kind and item.
public struct GrantLineKey: Sendable, Hashable, Comparable {
    public var book: String
    public var item: ItemID

    public init(book: String, item: ItemID) {
        self.book = book
        self.item = item
    }

    public static func < (lhs: GrantLineKey, rhs: GrantLineKey) -> Bool {
        (ReportOrder.book(lhs.book), ReportOrder.kind(lhs.item.kind), lhs.item.index)
            < (ReportOrder.book(rhs.book), ReportOrder.kind(rhs.item.kind), rhs.item.index)
    }
}

/// Sort keys shared by every part of a report, so CSV and Markdown list things in one order.
enum ReportOrder {
    /// Production first, then other books alphabetically.
    static func book(_ book: String) -> String { book == LedgerBook.production ? "" : book }

    /// Faces, backgrounds, then the total (nil).
    static func kind(_ kind: ItemKind?) -> Int {
        guard let kind else { return ItemKind.allCases.count }
        return ItemKind.allCases.firstIndex(of: kind)!
    }
}
