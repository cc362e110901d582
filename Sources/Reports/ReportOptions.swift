/// What a report needs besides its dates: the time zone that defines a day, the commission rate
/// it estimates with, and how much of the ledger it reconciles.
public struct ReportOptions: Sendable, Hashable {
    /// How much the report reconciles before it is written.
    public enum Reconciliation: String, Sendable, CaseIterable {
        /// Its own period: the report's totals against the ledger's postings for the same entries
        /// (costs what the period costs).
        case period
        /// Also every ledger invariant over all of history, as `shopledger reconcile` (costs what
        /// the history costs).
        case full
    }

    /// An IANA zone name the database knows (`UTC`, `Asia/Seoul`, `America/Los_Angeles`).
    public var timeZone: String
    public var commission: CommissionRate
    public var reconciliation: Reconciliation
    /// How many refunds the daily report lists one by one (all are counted).
    public var refundListLimit: Int
    /// The currency the report also shows its production totals in, with the rates to convert by
    /// (nil: per currency only, as without `--reporting-currency`).
    public var reportingCurrency: ReportingCurrency?

    public init(
        timeZone: String = "UTC", commission: CommissionRate = .standard, reconciliation: Reconciliation = .period,
        refundListLimit: Int = 100, reportingCurrency: ReportingCurrency? = nil
    ) {
        self.timeZone = timeZone
        self.commission = commission
        self.reconciliation = reconciliation
        self.refundListLimit = refundListLimit
        self.reportingCurrency = reportingCurrency
    }
}
