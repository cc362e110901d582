import Ledger
import Postgres

/// The invariant "report totals equal ledger totals": the revenue and refunds the report computes
/// (from purchases' prices and the journal's entry kinds, through the report's own aggregation)
/// equal the balances of the ledger's `revenue:*` and `refunds:*` postings, per book, account and
/// currency. It catches a report that counts what the ledger does not (family-shared or test
/// money as revenue, a refund on the wrong sign) and postings that disagree with their purchases.
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
            + "per account and currency, over all of history."
    }

    /// Over the journal entries of a report's window.
    init(window: ReportWindow, scope: String) {
        self.window = window
        self.summary =
            "The revenue and refunds this report computes equal the ledger's revenue and refunds postings, "
            + "per account and currency, for \(scope)."
    }

    public func run(on connection: PostgresConnection, failureLimit: Int) async throws -> ReconciliationCheckResult {
        let entries = try await RevenueQueries.entryGroups(window, on: connection)
        // The commission rate does not touch revenue or refunds; any rate gives the same amounts.
        let periods = try RevenueAggregator(commission: .standard).accumulate(entries)
        var expected: [AccountCurrency: Int64] = [:]
        for accumulation in periods.values {
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
        let failures = keys.compactMap { key -> ReconciliationFailure? in
            let report = expected[key] ?? 0
            let ledger = actual[key] ?? 0
            guard report != ledger else { return nil }
            return ReconciliationFailure(
                id: "\(key.account) \(key.currency)",
                detail: "the report counts a balance of \(report) milli, the ledger's postings sum to \(ledger) milli")
        }
        return ReconciliationCheckResult(
            name: name, summary: summary, examined: keys.count, examinedWhat: "account balances (account, currency)",
            failureCount: failures.count, failures: Array(failures.prefix(max(1, failureLimit))))
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
