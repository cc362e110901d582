import CivilDates
import Foundation

/// The rows a query reads: journal entries effective from `startsAt` (inclusive) to `endsAt`
/// (exclusive), assigned to periods that begin at local midnight of `periodStarts` in `timeZone`.
/// Every report query filters on this range, so it reads the `journal_entries_by_effective_at`
/// index range of its period, never the history.
struct ReportWindow: Sendable {
    let timeZone: String
    /// The first date of each period, ascending.
    let periodStarts: [CalendarDate]
    let startsAt: Date
    let endsAt: Date

    init(timeZone: String, periods: [ReportPeriod]) {
        precondition(!periods.isEmpty)
        self.timeZone = timeZone
        self.periodStarts = periods.map(\.first)
        self.startsAt = periods.first!.startsAt
        self.endsAt = periods.last!.endsAt
    }

    var periodStartTexts: [String] { periodStarts.map(\.description) }
}
