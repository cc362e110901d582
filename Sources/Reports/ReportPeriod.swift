import CivilDates
import Foundation

/// A span of whole days in the report's time zone, and the instants that bound it: from the first
/// day's midnight (inclusive) to the midnight after the last day (exclusive), as the database's time
/// zone rules give them. A day is 23 or 25 hours long when the zone changes its clocks.
public struct ReportPeriod: Sendable, Hashable {
    public let first: CalendarDate
    public let last: CalendarDate
    public let startsAt: Date
    public let endsAt: Date
    /// `startsAt` and `endsAt` as `YYYY-MM-DD HH:MM:SS` in UTC, formatted by the database.
    public let startsAtUTC: String
    public let endsAtUTC: String

    public init(
        first: CalendarDate, last: CalendarDate, startsAt: Date, endsAt: Date, startsAtUTC: String, endsAtUTC: String
    ) {
        self.first = first
        self.last = last
        self.startsAt = startsAt
        self.endsAt = endsAt
        self.startsAtUTC = startsAtUTC
        self.endsAtUTC = endsAtUTC
    }

    /// Whole seconds from start to end.
    public var seconds: Int { Int((endsAt.timeIntervalSince(startsAt)).rounded()) }

    /// `2025-03-09` for one day, `2025-03-03 – 2025-03-09` for several.
    public var label: String { first == last ? "\(first)" : "\(first) – \(last)" }

    /// `23 hours`, `24 hours`, `7 days`, `30 days 23 hours`, `24 hours 30 minutes`.
    public var lengthText: String {
        let minutes = seconds / 60
        let days = minutes / 1440
        let hours = minutes % 1440 / 60
        let rest = minutes % 60
        var parts: [String] = []
        if first == last || days == 0 {
            parts.append("\(minutes / 60) hours")
        } else {
            parts.append("\(days) days")
            if hours > 0 { parts.append("\(hours) hours") }
        }
        if rest > 0 { parts.append("\(rest) minutes") }
        return parts.joined(separator: " ")
    }
}
