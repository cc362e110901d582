/// A day of the proleptic Gregorian calendar, with no time zone: what `--date 2025-03-09` names.
///
/// Date arithmetic on civil dates needs no time zone (a day after 2025-03-09 is 2025-03-10
/// everywhere); only turning a date into instants does, and that is the database's job (the
/// reports ask PostgreSQL for each day's bounding instants), so that one time zone database decides
/// every boundary.
public struct CalendarDate: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let year: Int
    public let month: Int
    public let day: Int

    /// Nil unless `year`-`month`-`day` is a real date between years 1 and 9999.
    public init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month),
            (1...Int(CivilCalendar.daysIn(month: Int64(month), year: Int64(year)))).contains(day)
        else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    /// Parses exactly `YYYY-MM-DD`; nil for anything else (including impossible dates).
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10) else { return nil }
        self.init(year: year, month: month, day: day)
    }

    /// Days since 1970-01-01 (negative before it).
    public var daysSinceEpoch: Int {
        Int(CivilCalendar.daysFromCivil(year: Int64(year), month: Int64(month), day: Int64(day)))
    }

    /// The date `daysSinceEpoch` days after 1970-01-01; nil outside years 1–9999.
    public init?(daysSinceEpoch days: Int) {
        let (year, month, day) = CivilCalendar.civil(fromDays: Int64(days))
        self.init(year: Int(year), month: Int(month), day: Int(day))
    }

    /// The date `count` days later (earlier when negative). Traps outside years 1–9999, which
    /// validated inputs never reach.
    public func adding(days count: Int) -> CalendarDate {
        guard let date = CalendarDate(daysSinceEpoch: daysSinceEpoch + count) else {
            preconditionFailure("\(self) + \(count) days leaves years 1–9999")
        }
        return date
    }

    /// Days from `self` to `other` (positive when `other` is later).
    public func days(to other: CalendarDate) -> Int { other.daysSinceEpoch - daysSinceEpoch }

    /// ISO weekday: 1 Monday … 7 Sunday.
    public var isoWeekday: Int {
        let weekday = (daysSinceEpoch % 7 + 7 + 3) % 7  // 1970-01-01 was a Thursday (3 from Monday)
        return weekday + 1
    }

    /// The Monday of this date's ISO week.
    public var startOfWeek: CalendarDate { adding(days: 1 - isoWeekday) }

    /// The first day of this date's month.
    public var startOfMonth: CalendarDate { CalendarDate(year: year, month: month, day: 1)! }

    /// The first day of the next month.
    public var startOfNextMonth: CalendarDate {
        month == 12
            ? CalendarDate(year: year + 1, month: 1, day: 1)! : CalendarDate(year: year, month: month + 1, day: 1)!
    }

    /// `YYYY-MM-DD`.
    public var description: String {
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    public static func < (lhs: CalendarDate, rhs: CalendarDate) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }
}
