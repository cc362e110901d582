import Ledger
import Postgres

/// The invariant "report totals equal ledger totals": the revenue and refunds the report computes
/// (from purchases' prices and the journal's entry kinds, through the report's own aggregation)
/// equal the balances of the ledger's `revenue:*` and `refunds:*` postings, per book, account and
/// currency; each store's net revenue in the report equals the balance of that store's
/// `receivable:*` postings (`receivable:app_store`, `receivable:google_play`); and the stores'
/// units and amounts add up to the report's all-store figures on every line. It catches a report
/// that counts what the ledger does not (family-shared or test money as revenue, a refund on the
/// wrong sign, one store's money as another's) and postings that disagree with their purchases.
///
/// `shopledger reconcile` runs it over all of history; a report runs it over its own period.
public struct ReportTotalsCheck: ReconciliationCheck {
    public let name = "report_totals_match_ledger"
    public let summary: String
    let window: ReportWindow?

    /// Over all of history (for `shopledger reconcile`).
    public init() {
        self.window = nil
        self.summary =
            "The revenue and refunds a report computes equal the ledger's revenue and refunds postings, "
            + "and each store's net revenue its receivable postings, per account and currency, over all of "
            + "history; the stores' figures add up to the all-store figures."
    }

    /// Over the journal entries of a report's window.
    init(window: ReportWindow, scope: String) {
        self.window = window
        self.summary =
            "The revenue and refunds this report computes equal the ledger's revenue and refunds postings, "
            + "and each store's net revenue its receivable postings, per account and currency, for \(scope); "
            + "the stores' figures add up to the all-store figures."
    }

    public func run(on connection: PostgresConnection, failureLimit: Int) async throws -> ReconciliationCheckResult {
        let entries = try await RevenueQueries.entryGroups(window, on: connection)
        // The commission rate does not touch revenue or refunds; any rate gives the same amounts.
        let periods = try RevenueAggregator(commission: .standard).accumulate(entries)
        var expected: [AccountCurrency: Int64] = [:]
        var splitFailures: [ReconciliationFailure] = []
        var linesExamined = 0
        for (period, accumulation) in periods.sorted(by: { $0.key < $1.key }) {
            for (store, lines) in accumulation.storeLines {
                for (key, figures) in lines where key.level == .currency {
                    expected[
                        AccountCurrency(LedgerBook.account("receivable:\(store)", book: key.book), key.currency),
                        default: 0] += figures.netMilli
                }
            }
            linesExamined += accumulation.lines.count
            splitFailures += Self.storeSplitFailures(accumulation, period: period)
            for (key, figures) in accumulation.lines where key.level == .kind {
                let kind = key.kind!.rawValue
                expected[
                    AccountCurrency(LedgerBook.account("revenue:\(kind)", book: key.book), key.currency), default: 0] -=
                    figures.grossMilli
                expected[
                    AccountCurrency(LedgerBook.account("refunds:\(kind)", book: key.book), key.currency), default: 0] +=
                    figures.refundedMilli - figures.reversedMilli
            }
        }
        var actual: [AccountCurrency: Int64] = [:]
        for balance in try await RevenueQueries.revenuePostings(window, on: connection) {
            actual[AccountCurrency(balance.account, balance.currency), default: 0] += balance.amountMilli
        }
        let keys = Set(expected.filter { $0.value != 0 }.keys).union(actual.filter { $0.value != 0 }.keys).sorted()
        let balanceFailures = keys.compactMap { key -> ReconciliationFailure? in
            let report = expected[key] ?? 0
            let ledger = actual[key] ?? 0
            guard report != ledger else { return nil }
            return ReconciliationFailure(
                id: "\(key.account) \(key.currency)",
                detail: "the report counts a balance of \(report) milli, the ledger's postings sum to \(ledger) milli")
        }
        let failures = balanceFailures + splitFailures
        return ReconciliationCheckResult(
            name: name, summary: summary, examined: keys.count + linesExamined,
            examinedWhat: "account balances (account, currency) and revenue lines split by store",
            failureCount: failures.count, failures: Array(failures.prefix(max(1, failureLimit))))
    }

    /// The lines of `accumulation` whose stores' units and amounts do not add up to the line's (a
    /// store's line that has no all-store line counts as one).
    static func storeSplitFailures(
        _ accumulation: RevenueAggregator.Accumulation, period: Int
    ) -> [ReconciliationFailure] {
        var sums: [RevenueLineKey: RevenueFigures] = [:]
        for lines in accumulation.storeLines.values {
            for (key, figures) in lines {
                do {
                    try sums[key, default: RevenueFigures()].addAmounts(of: figures)
                } catch {
                    sums[key] = nil
                }
            }
        }
        let keys = Set(sums.keys).union(accumulation.lines.keys).sorted()
        return keys.compactMap { key in
            var all = accumulation.lines[key] ?? RevenueFigures()
            var stores = sums[key] ?? RevenueFigures()
            // Buyers are counted per store, never summed.
            (all.buyers, all.firstTimeBuyers, stores.buyers, stores.firstTimeBuyers) = (0, 0, 0, 0)
            guard all != stores else { return nil }
            let item = [key.kind?.rawValue, key.index.map(String.init)].compactMap { $0 }.joined(separator: " ")
            return ReconciliationFailure(
                id: "period \(period) \(key.book) \(key.currency) \(item.isEmpty ? "total" : item)",
                detail: "the stores' purchases, refunds, reversals and amounts do not add up to the line's: "
                    + "\(stores.purchases) purchases, \(stores.grossMilli) milli gross, \(stores.refundedMilli) milli "
                    + "refunded, \(stores.reversedMilli) milli reversed against \(all.purchases), \(all.grossMilli), "
                    + "\(all.refundedMilli), \(all.reversedMilli)")
        }
    }
}

/// An account in one currency.
private struct AccountCurrency: Hashable, Comparable {
    let account: String
    let currency: String

    init(_ account: String, _ currency: String) {
        self.account = account
        self.currency = currency
    }

    static func < (lhs: AccountCurrency, rhs: AccountCurrency) -> Bool {
        (lhs.account, lhs.currency) < (rhs.account, rhs.currency)
    }
}
