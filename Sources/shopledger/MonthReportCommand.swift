import ArgumentParser
import Reports

/// `shopledger report month YYYY-MM`: the month's range report, by day, in a folder named by the
/// month.
struct MonthReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "month",
        abstract: "Write the revenue report of one calendar month, by day.",
        discussion: """
            Writes OUT/YYYY-MM/revenue.csv, revenue.md and revenue.html (--format picks): the range \
            report of the month's first to last day in --tz, one period per day, with the whole month's \
            totals and distinct buyers.
            """)

    @Argument(help: ArgumentHelp("The month, e.g. 2026-11 (years 1970 to 9000).", valueName: "YYYY-MM"))
    var month: ReportMonth

    @OptionGroup var output: ReportOutputOptions
    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        try await output.make(from: database) { reporter, options in
            try await reporter.month(month, options: options)
        }
    }
}

extension ReportMonth: ExpressibleByArgument {
    /// Exactly `YYYY-MM`, years 1970 to 9000.
    public init?(argument: String) { self.init(argument) }
}
