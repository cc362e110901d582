import Ledger

/// Every figure of one period: revenue lines per book, currency, kind and item (with kind and
/// currency totals), grants without revenue, and buyers per book across currencies.
public struct PeriodFigures: Sendable, Hashable {
    public let period: ReportPeriod
    public internal(set) var lines: [RevenueLineKey: RevenueFigures] = [:]
    /// The same lines per store (`app_store`, `google_play`, `stub`; `ReportStore`): each store's
    /// units and amounts, summed over the stores, are `lines`' exactly; buyers are counted per store
    /// (a user who bought in both stores counts in each).
    public internal(set) var storeLines: [String: [RevenueLineKey: RevenueFigures]] = [:]
    /// Purchases recorded without a price (grants, not revenue, until a price is learned) per book and
    /// store: Google Play's purchases are recorded unpriced (docs/google-play.md).
    public internal(set) var unpricedByStore: [String: [String: Int]] = [:]
    public internal(set) var grants: [GrantLineKey: GrantFigures] = [:]
    /// Distinct buyers per book over all currencies (a user paying in two currencies counts once).
    public internal(set) var buyersByBook: [String: BuyerCounts] = [:]

    public init(period: ReportPeriod) {
        self.period = period
    }

    /// Books with any activity, production first.
    public var books: [String] {
        Set(lines.keys.map(\.book)).union(grants.keys.map(\.book)).sorted {
            ReportOrder.book($0) < ReportOrder.book($1)
        }
    }

    /// Currencies with revenue lines in `book`, by code.
    public func currencies(in book: String) -> [String] {
        Set(lines.keys.filter { $0.book == book }.map(\.currency)).sorted()
    }

    /// The lines of `book`, in report order (items, then each kind's total, then the currency total).
    public func sortedLines(in book: String? = nil) -> [(key: RevenueLineKey, figures: RevenueFigures)] {
        lines.filter { book == nil || $0.key.book == book }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// The total of `currency` in `book` (empty figures when nothing happened).
    public func total(book: String, currency: String) -> RevenueFigures {
        lines[RevenueLineKey(book: book, currency: currency)] ?? RevenueFigures()
    }

    /// The stores with revenue lines in `book` (every book when nil), in report order (`ReportStore`).
    public func stores(in book: String? = nil) -> [String] {
        storeLines.filter { $0.value.keys.contains { book == nil || $0.book == book } }.keys.sorted {
            ReportStore.order($0) < ReportStore.order($1)
        }
    }

    /// The lines of `store` in `book` (every book when nil), in report order.
    public func sortedLines(
        store: String, in book: String? = nil
    ) -> [(
        key: RevenueLineKey, figures: RevenueFigures
    )] {
        (storeLines[store] ?? [:]).filter { book == nil || $0.key.book == book }.sorted { $0.key < $1.key }.map {
            ($0.key, $0.value)
        }
    }

    /// The total of `currency` in `book` in `store` (empty figures when nothing happened there).
    public func total(book: String, currency: String, store: String) -> RevenueFigures {
        storeLines[store]?[RevenueLineKey(book: book, currency: currency)] ?? RevenueFigures()
    }

    /// The grant lines of `book`, in report order.
    public func sortedGrants(in book: String? = nil) -> [(key: GrantLineKey, figures: GrantFigures)] {
        grants.filter { book == nil || $0.key.book == book }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Whether the production book had any revenue activity or grants.
    public var hasProductionActivity: Bool {
        lines.keys.contains { $0.book == LedgerBook.production }
            || grants.keys.contains { $0.book == LedgerBook.production }
    }
}

/// Distinct buyers, and how many of them bought for the first time.
public struct BuyerCounts: Sendable, Hashable {
    public var buyers = 0
    public var firstTime = 0

    public init(buyers: Int = 0, firstTime: Int = 0) {
        self.buyers = buyers
        self.firstTime = firstTime
    }
}
