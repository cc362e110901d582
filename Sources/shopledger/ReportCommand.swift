import ArgumentParser
import CivilDates
import Foundation
import Ledger
import Logging
import Postgres
import Reports

/// `shopledger report daily|range|month`: revenue reports from the ledger as CSV, Markdown and HTML.
struct ReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Write revenue reports (CSV, Markdown and HTML) from the ledger.",
        subcommands: [DailyReportCommand.self, RangeReportCommand.self, MonthReportCommand.self])
}

/// Options every report takes.
struct ReportOutputOptions: ParsableArguments {
    @Option(
        name: .customLong("tz"), help: "IANA time zone that defines a day, e.g. UTC, Asia/Seoul, America/Los_Angeles.")
    var timeZone = "UTC"

    @Option(name: .customLong("out"), help: "Folder the report's folder is written in.")
    var outputDirectory = "reports"

    @Option(help: "Files to write: csv, md, html, or a list such as csv,md,html.")
    var format = "csv,md,html"

    @Option(
        help: "Estimated store commission as a fraction: 0.30 (App Store standard) or 0.15 (Small Business Program).")
    var commission = CommissionRate.standard

    @Option(
        help: "What to reconcile: period (this report's rows) or full (every ledger invariant over all of history).")
    var reconcile = "period"

    @Flag(help: "Print the files written and the report's figures as JSON (the files are still written).")
    var json = false

    @Option(
        help: ArgumentHelp(
            "Also show the production totals converted to this currency (needs --fx-rates).", valueName: "CODE"))
    var reportingCurrency: String?

    @Option(
        help: ArgumentHelp(
            "Exchange rates for --reporting-currency: date,currency,rate_per_unit_of_reporting_currency rows or the ECB's eurofxref-hist.csv.",
            valueName: "FILE"))
    var fxRates: String?

    func validate() throws {
        guard TimeZone(identifier: timeZone) != nil || timeZone == "UTC" else {
            throw ValidationError(
                "--tz '\(timeZone)' is not a time zone name; use one such as UTC, Asia/Seoul or America/Los_Angeles.")
        }
        _ = try formats()
        _ = try options()
        try validateReportingCurrency()
    }

    func formats() throws -> [ReportFormat] {
        do {
            let formats = try ReportFormat.list(format)
            guard !formats.isEmpty else {
                throw ValidationError("--format names no format; use csv, md, html or a list such as csv,md,html.")
            }
            return formats
        } catch let error as ReportError {
            throw ValidationError("--format: \(error.message)")
        }
    }

    func options() throws -> ReportOptions {
        guard let scope = ReportOptions.Reconciliation(rawValue: reconcile) else {
            throw ValidationError("--reconcile must be period or full.")
        }
        return ReportOptions(timeZone: timeZone, commission: commission, reconciliation: scope)
    }

    /// On a hot standby, says on standard error how current it is: the report itself says "data as of"
    /// the newest ledger entry the standby has (so a caught-up standby writes the primary's bytes), and
    /// this says when the last transaction it replayed was committed on the primary.
    func noteStandby(_ client: PostgresClient) async throws {
        let (standby, replayedAt) = try await client.query(
            """
            SELECT pg_is_in_recovery(),
                   to_char(pg_last_xact_replay_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')
            """
        ).single().decode((Bool, String?).self)
        guard standby else { return }
        FileHandle.standardError.write(
            Data(
                ("report: read from a hot standby; the last transaction it replayed was committed at "
                    + (replayedAt.map { "\($0) UTC" } ?? "(none replayed since it started)")
                    + "; the report's data as of is the newest ledger entry it has\n").utf8))
    }

    /// Makes a report with `build` from the database (noting a hot standby, retrying recovery conflicts),
    /// then writes it (``write(_:logger:)``).
    func make(
        from database: DatabaseOptions,
        _ build: @Sendable (RevenueReporter, ReportOptions) async throws -> RevenueReport
    ) async throws {
        let logger = CommandLogging.logger()
        var configured = try options()
        configured.reportingCurrency = try reportingCurrencyRates()
        let options = configured
        let report = try await database.withClient(schema: .requireCurrent, logger: logger) { client in
            try await noteStandby(client)
            return try await retryingRecoveryConflicts(logger: logger) {
                try await build(RevenueReporter(client: client, logger: logger), options)
            }
        }
        try write(report, logger: logger)
    }

    /// Writes the report and prints where; exit status 1 when its reconciliation failed.
    func write(_ report: RevenueReport, logger: Logger) throws {
        let paths = try ReportWriter(outputDirectory: outputDirectory, logger: logger).write(
            report, formats: try formats())
        if json {
            try JSONOutput.print(RevenueReportJSON(report, files: paths))
        } else {
            for path in paths { print("wrote \(path)") }
        }
        if !report.reconciled {
            let failed = report.reconciliation.filter { !$0.passed }.map(\.name).joined(separator: ", ")
            FileHandle.standardError.write(
                Data(
                    ("report: reconciliation failed (\(failed)); the figures disagree with the ledger, see the report's last section\n")
                        .utf8))
            throw ExitCode(1)
        }
    }
}

/// `shopledger report daily`: the nightly job.
struct DailyReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daily",
        abstract: "Write the revenue report of one day (default: yesterday in --tz).",
        discussion: """
            Writes OUT/YYYY-MM-DD/revenue.csv, revenue.md and revenue.html (--format picks), each \
            atomically (a temporary file renamed over the old one). Purchases count on the day they were \
            made; refunds on the day the store processed them. Running it again over the same ledger writes \
            the same bytes. Exit status: 0 written, 1 the report's reconciliation failed (the files are \
            still written) or it could not be made.
            """)

    @Option(help: ArgumentHelp("The day. Default: yesterday in --tz.", valueName: "YYYY-MM-DD"))
    var date: CalendarDate?

    @OptionGroup var output: ReportOutputOptions
    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        if let date { try ReportDates.check(date, "--date") }
    }

    func run() async throws {
        try await output.make(from: database) { reporter, options in
            try await reporter.daily(date: date, options: options)
        }
    }
}

/// `shopledger report range`: ad-hoc periods.
struct RangeReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "range",
        abstract: "Write the revenue report of a range of days, per day, week or month.",
        discussion: """
            Writes OUT/FROM_TO_by-GROUPING/revenue.csv, revenue.md and revenue.html (--format picks). \
            --from and --to are included. Weeks run Monday to Sunday; the first and last period are \
            clipped to the range.
            """)

    @Option(help: ArgumentHelp("First day.", valueName: "YYYY-MM-DD"))
    var from: CalendarDate

    @Option(help: ArgumentHelp("Last day (included).", valueName: "YYYY-MM-DD"))
    var to: CalendarDate

    @Option(help: "Periods: day, week or month.")
    var by = ReportGrouping.day

    @OptionGroup var output: ReportOutputOptions
    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        try ReportDates.check(from, "--from")
        try ReportDates.check(to, "--to")
        guard from <= to else { throw ValidationError("--from \(from) is after --to \(to).") }
    }

    func run() async throws {
        try await output.make(from: database) { reporter, options in
            try await reporter.range(from: from, through: to, by: by, options: options)
        }
    }
}

/// The days a report may be asked for (Reports' ``ReportDates/range``), as a usage error.
extension ReportDates {
    static func check(_ date: CalendarDate, _ flag: String) throws {
        guard range.contains(date) else {
            throw ValidationError("\(flag) \(date) is outside \(range.lowerBound) … \(range.upperBound).")
        }
    }
}
