import AppleSales
import ArgumentParser
import CivilDates
import Foundation
import Postgres

/// `shopledger apple`: Apple's own records of the shop's sales, beside the ledger (docs/finance.md).
struct AppleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apple",
        abstract: "Apple's own sales records: import Apple's daily Summary Sales Reports.",
        subcommands: [AppleSalesCommand.self])
}

/// `shopledger apple sales`: Sales and Trends' daily Summary Sales Reports.
struct AppleSalesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sales",
        abstract: "Apple's daily Summary Sales Reports (Sales and Trends).",
        subcommands: [AppleSalesImportCommand.self, AppleSalesFetchCommand.self])
}

/// `shopledger apple sales import FILE…`: stores each file (gzip'd `.txt.gz` as Apple serves them, or
/// plain `.txt`), each whole or not at all; `shopledger reconcile apple --date D` compares it.
struct AppleSalesImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import daily Summary Sales Report files (.txt.gz or .txt) into the database.",
        discussion: """
            Each file is parsed whole before anything is stored, and stored in one transaction: a \
            malformed file is refused with its line and column and nothing of it is stored; the other \
            files are still imported. The same content imported again is reported "already imported" \
            and stores nothing. A different file for a date already imported is stored too; the \
            comparison reads the newest import of a date.

            Exit status: 0 every file imported or already imported, 1 a file was refused or could not be read.
            """)

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    @Argument(help: ArgumentHelp("Summary Sales Report files (.txt.gz or .txt).", valueName: "file"))
    var files: [String]

    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("Name at least one report file.") }
    }

    func run() async throws {
        let logger = CommandLogging.logger()
        let files = files
        let failures = try await database.withClient(schema: .requireCurrent, logger: logger) { client in
            let importer = AppleSalesImporter(client: client)
            var failures = 0
            for file in files {
                do {
                    let bytes = try Self.read(file, limit: SummarySalesLimits.standard.maximumFileBytes)
                    let outcome = try await importer.importReport(bytes: bytes, fileName: file)
                    print(outcome.summary)
                } catch let error as AppleSalesError {
                    failures += 1
                    Self.printError("\(file): refused, nothing stored: \(error)")
                } catch let error as FileReadError {
                    failures += 1
                    Self.printError("\(file): \(error.message)")
                }
            }
            return failures
        }
        if failures > 0 {
            Self.printError("\(failures) of \(files.count) files were not imported")
            throw ExitCode(1)
        }
    }

    struct FileReadError: Error {
        let message: String
    }

    /// The file's bytes, refusing more than `limit` before reading them all.
    static func read(_ path: String, limit: Int) throws -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw FileReadError(message: "cannot open the file")
        }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: limit + 1) ?? Data()
        } catch {
            throw FileReadError(message: "cannot read the file: \(error.localizedDescription)")
        }
        guard data.count <= limit else {
            throw FileReadError(message: "refused, nothing stored: the file is larger than \(limit) bytes")
        }
        return [UInt8](data)
    }

    static func printError(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}

/// `shopledger reconcile apple --date D`: Apple's Summary Sales Report of day D against the ledger.
struct ReconcileAppleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apple",
        abstract: "Compare Apple's imported Summary Sales Report of a day with the ledger.",
        discussion: """
            Apple's day is a Pacific-time day (America/Los_Angeles). Per product, country and currency, \
            compares Apple's in-app purchase units (IA1 rows, refunds negative) and customer price totals \
            with the ledger's production purchases (bought, not family-shared, priced) of that day, less \
            the refunds and plus the reversals of that day. Reads one read-only snapshot. See docs/finance.md.

            Exit status: 0 all matched, 1 a discrepancy, 2 no report of that date was imported.
            """)

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    @Option(help: ArgumentHelp("Apple's report day (YYYY-MM-DD, Pacific time).", valueName: "date"))
    var date: CalendarDate

    @Flag(help: "Print the comparison as JSON.")
    var json = false

    func run() async throws {
        let logger = CommandLogging.logger()
        let day = date
        let comparison: AppleSalesComparison
        do {
            comparison = try await database.withClient(schema: .requireCurrent, logger: logger) { client in
                try await retryingRecoveryConflicts(logger: logger) {
                    try await AppleSalesComparer(client: client).compare(date: day)
                }
            }
        } catch let error as AppleSalesError where error.code == .noReport {
            AppleSalesImportCommand.printError("reconcile apple: \(error.message)")
            throw ExitCode(2)
        }
        print(json ? try comparison.json() : comparison.text)
        if !comparison.passed { throw ExitCode(1) }
    }
}
