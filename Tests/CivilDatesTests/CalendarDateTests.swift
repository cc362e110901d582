import CivilDates
import Foundation
import Testing

func date(_ text: String) -> CalendarDate { CalendarDate(text)! }

@Suite("Civil dates")
struct CalendarDateTests {
    @Test("CalendarDate parses YYYY-MM-DD only and does calendar arithmetic")
    func calendarDates() {
        #expect(CalendarDate("2024-02-29")?.description == "2024-02-29")
        for bad in [
            "2023-02-29", "2025-13-01", "2025-1-01", "20250101", "2025-01-01T00:00", "", "0000-01-01", "２０２５-01-01",
        ] {
            #expect(CalendarDate(bad) == nil, "\(bad)")
        }
        #expect(date("2025-03-09").adding(days: 1) == date("2025-03-10"))
        #expect(date("2024-12-31").adding(days: 1) == date("2025-01-01"))
        #expect(date("2024-03-01").adding(days: -1) == date("2024-02-29"))
        #expect(date("1970-01-01").daysSinceEpoch == 0)
        #expect(date("2025-03-09").days(to: date("2025-11-02")) == 238)
        #expect(date("2025-03-09").isoWeekday == 7)  // a Sunday
        #expect(date("2025-03-10").isoWeekday == 1)
        #expect(date("2025-03-09").startOfWeek == date("2025-03-03"))
        #expect(date("2025-12-15").startOfNextMonth == date("2026-01-01"))
    }

    /// Foundation's Gregorian calendar in UTC, the independent answer.
    static let gregorian: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    @Test("days since 1970 agree with Foundation's Gregorian calendar, every 97th day from 1600 to 2400")
    func daysAgreeWithFoundation() throws {
        let start = CivilCalendar.daysFromCivil(year: 1600, month: 1, day: 1)
        let end = CivilCalendar.daysFromCivil(year: 2400, month: 12, day: 31)
        for days in stride(from: start, through: end, by: 97) {
            let instant = Date(timeIntervalSince1970: TimeInterval(days) * 86_400)
            let parts = Self.gregorian.dateComponents([.year, .month, .day, .weekday], from: instant)
            let civil = CivilCalendar.civil(fromDays: days)
            #expect(
                civil.year == Int64(parts.year!) && civil.month == Int64(parts.month!)
                    && civil.day == Int64(parts.day!),
                "\(days): \(civil) vs \(parts)")
            #expect(CivilCalendar.daysFromCivil(year: civil.year, month: civil.month, day: civil.day) == days)
            if let date = CalendarDate(daysSinceEpoch: Int(days)) {
                // Foundation counts Sunday as 1, ISO as 7.
                #expect(date.isoWeekday == (parts.weekday! + 5) % 7 + 1, "\(date)")
            }
        }
    }

    @Test("leap years and month lengths: 1900 is not a leap year, 2000 is, February has 28 or 29 days")
    func leapYears() {
        #expect(!CivilCalendar.isLeapYear(1900) && CivilCalendar.isLeapYear(2000) && CivilCalendar.isLeapYear(2024))
        #expect(!CivilCalendar.isLeapYear(2100) && !CivilCalendar.isLeapYear(2025))
        #expect(CivilCalendar.daysIn(month: 2, year: 2024) == 29 && CivilCalendar.daysIn(month: 2, year: 1900) == 28)
        #expect((1...12).map { CivilCalendar.daysIn(month: $0, year: 2025) }.reduce(0, +) == 365)
        #expect(
            CalendarDate(year: 1900, month: 2, day: 29) == nil && CalendarDate(year: 2000, month: 2, day: 29) != nil)
    }

    @Test("month boundaries: the start of a month and of the next, across a year's end")
    func monthBoundaries() {
        #expect(date("2024-02-29").startOfMonth == date("2024-02-01"))
        #expect(date("2024-02-29").startOfNextMonth == date("2024-03-01"))
        #expect(date("2025-01-31").startOfMonth.adding(days: -1) == date("2024-12-31"))
        #expect(date("2025-06-30") < date("2025-07-01") && !(date("2025-07-01") < date("2025-06-30")))
        #expect(CalendarDate(daysSinceEpoch: date("2031-05-17").daysSinceEpoch) == date("2031-05-17"))
    }
}
