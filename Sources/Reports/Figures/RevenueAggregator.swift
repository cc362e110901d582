import Ledger
import Receipts

/// Turns the queries' groups into report figures, in exact integer arithmetic: units and amounts
/// per item, summed to kind and currency totals, over all stores and per store; commission per unit;
/// buyers as counted by the database at each level (never summed).
struct RevenueAggregator: Sendable {
    let commission: CommissionRate

    /// The lines of each period (1-based, as `width_bucket` numbers them).
    struct Accumulation: Sendable {
        var lines: [RevenueLineKey: RevenueFigures] = [:]
        var storeLines: [String: [RevenueLineKey: RevenueFigures]] = [:]
        var unpricedByStore: [String: [String: Int]] = [:]
        var grants: [GrantLineKey: GrantFigures] = [:]
        var buyersByBook: [String: BuyerCounts] = [:]
    }

    /// Units, amounts and grants per period from `entries`.
    /// - Throws: `ReportError(.overflow)` when an amount does not fit in Int64.
    func accumulate(_ entries: [EntryGroup]) throws(ReportError) -> [Int: Accumulation] {
        var periods: [Int: Accumulation] = [:]
        for group in entries {
            var accumulation = periods[group.period] ?? Accumulation()
            defer { periods[group.period] = accumulation }
            if group.ownership != .purchased {
                // Family sharing: the organiser paid; the member is granted the item, no revenue.
                let key = GrantLineKey(book: group.book, item: group.item)
                switch group.entryKind {
                case .purchase: accumulation.grants[key, default: GrantFigures()].familyShared += group.count
                case .familyRevoke, .refund:
                    accumulation.grants[key, default: GrantFigures()].familyRevokes += group.count
                case .refundReversal, .priceLearned: break
                }
                continue
            }
            guard let currency = group.currency, let price = group.priceMilli else {
                // The store sent no price: an item granted, an amount unknown.
                if group.entryKind == .purchase {
                    accumulation.grants[GrantLineKey(book: group.book, item: group.item), default: GrantFigures()]
                        .unpriced +=
                        group.count
                    accumulation.unpricedByStore[group.book, default: [:]][group.store, default: 0] += group.count
                }
                continue
            }
            let count = Int64(group.count)
            let unitCommission = commission.commissionMilli(onUnitPriced: price, currency: currency)
            var figures = RevenueFigures()
            switch group.entryKind {
            case .purchase, .priceLearned:
                // A price learned later counts as the purchase's revenue when it is learned (its
                // purchase entry counted as an unpriced grant on the day of the purchase).
                figures.purchases = group.count
                figures.grossMilli = try RevenueFigures.product(count, price)
                figures.commissionMilli = try RevenueFigures.product(count, unitCommission)
            case .refund:
                figures.refunds = group.count
                figures.refundedMilli = try RevenueFigures.product(count, price)
                figures.commissionMilli = try RevenueFigures.product(-count, unitCommission)
            case .refundReversal:
                figures.reversals = group.count
                figures.reversedMilli = try RevenueFigures.product(count, price)
                figures.commissionMilli = try RevenueFigures.product(count, unitCommission)
            case .familyRevoke:
                continue  // a family revoke of a bought purchase does not happen; nothing to count
            }
            let itemKey = RevenueLineKey(
                book: group.book, currency: currency, kind: group.item.kind, index: group.item.index)
            for key in [
                itemKey, RevenueLineKey(book: group.book, currency: currency, kind: group.item.kind),
                RevenueLineKey(book: group.book, currency: currency),
            ] {
                try accumulation.lines[key, default: RevenueFigures()].addAmounts(of: figures)
                try accumulation.storeLines[group.store, default: [:]][key, default: RevenueFigures()].addAmounts(
                    of: figures)
            }
        }
        return periods
    }

    /// Adds the buyer counts to the periods' lines.
    func addBuyers(_ buyers: [BuyerGroup], to periods: inout [Int: Accumulation]) {
        for group in buyers {
            var accumulation = periods[group.period] ?? Accumulation()
            defer { periods[group.period] = accumulation }
            let counts = BuyerCounts(buyers: group.buyers, firstTime: group.firstTime)
            let key: RevenueLineKey
            switch group.groupingLevel {
            case 0:
                guard let currency = group.currency, let kind = group.kind, let index = group.index else { continue }
                key = RevenueLineKey(book: group.book, currency: currency, kind: kind, index: index)
            case 1:
                guard let currency = group.currency, let kind = group.kind else { continue }
                key = RevenueLineKey(book: group.book, currency: currency, kind: kind)
            case 3:
                guard let currency = group.currency else { continue }
                key = RevenueLineKey(book: group.book, currency: currency)
            default:
                guard group.store == nil else { continue }
                accumulation.buyersByBook[group.book] = counts
                continue
            }
            if let store = group.store {
                accumulation.storeLines[store, default: [:]][key, default: RevenueFigures()].buyers = counts.buyers
                accumulation.storeLines[store, default: [:]][key, default: RevenueFigures()].firstTimeBuyers =
                    counts.firstTime
            } else {
                accumulation.lines[key, default: RevenueFigures()].buyers = counts.buyers
                accumulation.lines[key, default: RevenueFigures()].firstTimeBuyers = counts.firstTime
            }
        }
    }

    /// The figures of each period, in order.
    func figures(
        periods: [ReportPeriod], entries: [EntryGroup], buyers: [BuyerGroup]
    ) throws(ReportError)
        -> [PeriodFigures]
    {
        var accumulated = try accumulate(entries)
        addBuyers(buyers, to: &accumulated)
        return periods.enumerated().map { offset, period in
            var figures = PeriodFigures(period: period)
            if let accumulation = accumulated[offset + 1] {
                figures.lines = accumulation.lines
                figures.storeLines = accumulation.storeLines
                figures.unpricedByStore = accumulation.unpricedByStore
                figures.grants = accumulation.grants
                figures.buyersByBook = accumulation.buyersByBook
            }
            return figures
        }
    }
}
