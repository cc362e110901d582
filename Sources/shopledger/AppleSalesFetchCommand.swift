import AppStoreServerAPI
import AppleSales
import ArgumentParser
import CivilDates
import Foundation
import Logging

/// `shopledger apple sales fetch`: downloads one day's Summary Sales Report from the App Store Connect
/// API and imports it, as `apple sales import` imports a file.
struct AppleSalesFetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Download a day's Summary Sales Report from App Store Connect and import it.",
        discussion: """
            Apple makes a day's report (a Pacific-time day) the next day. A day Apple says had no sales is \
            recorded as such, and compared. Exit status: 0 imported, already imported, or no sales recorded; \
            75 not available yet or rate limited (try again later); 1 any other failure.
            """)

    /// sysexits' EX_TEMPFAIL: the same command will work later.
    static let tryLater: Int32 = 75

    @Option(
        help: ArgumentHelp(
            "Apple's report day (YYYY-MM-DD, Pacific time). Default: yesterday in America/Los_Angeles.",
            valueName: "date"))
    var date: CalendarDate?

    @Option(
        name: .customLong("report-version"),
        help: "The report's format version, such as 1_0 or 1_3. Default: Apple's.")
    var reportVersion: String?

    @Option(
        name: .customLong("save"),
        help: "Also keep the file as Apple served it in this folder (S_D_<vendor>_<YYYYMMDD>.txt.gz).")
    var saveFolder: String?

    @OptionGroup(title: "App Store Connect API") var connect: AppStoreConnectOptions

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        if let reportVersion, !SalesReportsClient.isVersion(reportVersion) {
            throw ValidationError("--report-version '\(reportVersion)' is not a version such as 1_0")
        }
        _ = try connect.configuration()
    }

    /// Yesterday in Apple's reporting zone: the newest day a report can exist for.
    static func yesterdayInPacificTime(now: Date = Date()) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "America/Los_Angeles") ?? calendar.timeZone
        let parts = calendar.dateComponents([.year, .month, .day], from: now)
        guard let year = parts.year, let month = parts.month, let day = parts.day,
            let today = CalendarDate(year: year, month: month, day: day)
        else { return "" }
        return "\(today.adding(days: -1))"
    }

    func run() async throws {
        let logger = CommandLogging.logger()
        let day = date?.description ?? Self.yesterdayInPacificTime()
        let configuration = try connect.configuration()
        let client = try SalesReportsClient(configuration: configuration, logger: logger)
        let download: SalesReportsClient.Download
        do {
            download = try await client.dailySummary(date: day, version: reportVersion)
        } catch let error as AppStoreServerAPIError {
            Self.complain("apple sales fetch \(day): \(error)")
            throw ExitCode(error.code == .rateLimited ? Self.tryLater : 1)
        }
        switch download {
        case .noSales(let detail):
            // Recorded as a report without rows, so `reconcile apple` compares the day with Apple's zero.
            guard let date = CalendarDate(day) else { throw ValidationError("'\(day)' is not a date") }
            let outcome = try await database.withClient(schema: .requireCurrent, logger: logger) { postgres in
                try await AppleSalesImporter(client: postgres).recordNoSales(date: date)
            }
            print("\(day): Apple says: \(detail)")
            print(outcome.summary)
        case .notYetAvailable(let detail):
            Self.complain("\(day): Apple has no report yet (\(detail)). Try again later.")
            throw ExitCode(Self.tryLater)
        case .report(let gzip):
            let compact = day.replacingOccurrences(of: "-", with: "")
            let name = "S_D_\(configuration.vendorNumber)_\(compact).txt.gz"
            if let saveFolder { try Self.save(gzip, as: name, in: saveFolder) }
            do {
                let outcome = try await database.withClient(schema: .requireCurrent, logger: logger) { postgres in
                    try await AppleSalesImporter(client: postgres).importReport(bytes: gzip, fileName: name)
                }
                print(outcome.summary)
            } catch let error as AppleSalesError {
                Self.complain("\(name): refused, nothing stored: \(error)")
                throw ExitCode(1)
            }
        }
    }

    /// Writes `bytes` to `folder/name` through a temporary file and a rename, so no half file is left.
    static func save(_ bytes: [UInt8], as name: String, in folder: String) throws {
        let folderURL = URL(fileURLWithPath: folder, isDirectory: true)
        try FileManager.default.createDirectory(at: folderURL, withIntermediateDirectories: true)
        let target = folderURL.appendingPathComponent(name)
        let temporary = folderURL.appendingPathComponent(".\(name).\(UUID().uuidString)")
        try Data(bytes).write(to: temporary)
        guard rename(temporary.path, target.path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(at: temporary)
            throw ValidationError("cannot save \(target.path): \(reason)")
        }
    }

    static func complain(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }
}
