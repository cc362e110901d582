import CivilDates

/// The days a report may be asked for: far from the calendar's ends (years 1 and 9999), which a
/// report's trend days and periods would step past. `shopledger report` and the console's money pages
/// both refuse a day outside it.
public enum ReportDates {
    public static let range =
        CalendarDate(year: 1970, month: 1, day: 1)!...CalendarDate(year: 9000, month: 12, day: 31)!
}
