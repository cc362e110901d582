import CivilDates

/// How a range report divides its days: one period per day, per ISO week (Monday to Sunday, as
/// Apple's weekly reports) or per calendar month. Periods are clipped to the requested range, so
/// the first and last may be partial.
public enum ReportGrouping: String, Sendable, CaseIterable {
    case day
    case week
    case month

    /// The periods covering `first...last` (inclusive), each as its first and last date.
    public func periods(from first: CalendarDate, through last: CalendarDate) -> [ClosedRange<CalendarDate>] {
        guard first <= last else { return [] }
        var periods: [ClosedRange<CalendarDate>] = []
        var start = first
        while start <= last {
            let next: CalendarDate
            switch self {
            case .day: next = start.adding(days: 1)
            case .week: next = start.startOfWeek.adding(days: 7)
            case .month: next = start.startOfNextMonth
            }
            let end = min(next.adding(days: -1), last)
            periods.append(start...end)
            start = next
        }
        return periods
    }
}
