import ArgumentParser
import CivilDates
import Reports

// The report and seed options are typed at the boundary: ArgumentParser parses each value once, and
// the commands receive dates, groupings and rates, never strings to parse again.

extension CalendarDate: ExpressibleByArgument {
    /// Exactly `YYYY-MM-DD`, a real date.
    public init?(argument: String) { self.init(argument) }
}

extension ReportGrouping: ExpressibleByArgument {}

extension CommissionRate: ExpressibleByArgument {
    /// A fraction between 0 and 1 with at most 6 decimals, e.g. 0.30 or 0.15.
    public init?(argument: String) { self.init(decimal: argument) }
}
