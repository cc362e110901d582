import AppleSales
import CivilDates
import Ledger

/// Everything a report shows, read from one database snapshot; rendered by `RevenueCSV` and
/// `RevenueMarkdown`. Nothing in it depends on when it was made, so the same ledger gives the
/// same bytes.
public struct RevenueReport: Sendable {
    public enum Kind: Sendable, Hashable {
        /// One day, with the days before it for comparison.
        case daily(CalendarDate)
        /// A range of days divided into periods.
        case range(first: CalendarDate, last: CalendarDate, grouping: ReportGrouping)
    }

    public let kind: Kind
    public let options: ReportOptions
    /// The periods the report is about: the day (daily), or each period of the range.
    public let periods: [PeriodFigures]
    /// The whole range as one period (distinct buyers over the range); the day itself for a daily report.
    public let whole: PeriodFigures
    /// Daily only: the 14 days ending on the report's day, oldest first (the trend, the previous
    /// day and the trailing 7-day average come from here).
    public let trend: [PeriodFigures]
    /// Daily only: the day's production refunds and reversals, at most `options.refundListLimit`.
    public let refunds: [RefundLine]
    public let catalog: ReportCatalog
    /// When the newest journal entry was recorded (UTC), nil for an empty ledger.
    public let dataAsOf: String?
    public let reconciliation: [ReconciliationCheckResult]
    /// Daily only: Apple's Summary Sales Report of the same date against the ledger, when imported.
    public internal(set) var appleSays: AppleSalesComparison? = nil
    /// Refund rates' and ARPPU's inputs live in the figures above; storefronts, the trailing 30 and
    /// 90 days and a month report's month live here (issue 28).
    public internal(set) var operators = OperatorFigures()
    /// The production figures in `options.reportingCurrency` (nil without one).
    public var converted: ConvertedFigures? = nil

    public var reconciled: Bool { reconciliation.allSatisfy(\.passed) }

    /// The folder name under the output directory: `2025-03-09`, `2025-03-01_2025-03-31_by-week`, or
    /// a month report's `2025-03`.
    public var folderName: String {
        if let month = operators.month { return month }
        return switch kind {
        case .daily(let date): "\(date)"
        case .range(let first, let last, let grouping): "\(first)_\(last)_by-\(grouping.rawValue)"
        }
    }
}
