import ArgumentParser
import Foundation
import GooglePlay
import Ledger
import Logging
import Shop

/// `shopledger google ...`: the Google Play Developer API from the command line.
struct GoogleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "google",
        abstract: "Ask Google Play: read voided purchases into the ledger, retry owed acknowledgements.",
        subcommands: [GoogleSyncCommand.self])
}

struct GoogleSyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Record the refunds of Google Play's voided purchases since a date; retry owed acknowledgements.",
        discussion: """
            Acknowledges to Google every recorded Play purchase still owed one (Google refunds a purchase \
            not acknowledged within three days), then reads purchases.voidedpurchases.list since --since \
            (Google keeps 30 days) and records each as its purchase's refund, the same refund event however \
            often it is read or pushed. Prints what it did; exit code 1 when the voided purchases could not \
            all be read (the next run reads them again).
            """)

    @Option(help: "Start of the voided purchases read: YYYY-MM-DD (UTC) or an ISO 8601 time.")
    var since: TimeArgument

    @OptionGroup(title: "Google Play") var googlePlay: GooglePlayAPIOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = CommandLogging.logger()
        guard let settings = try googlePlay.apiConfiguration() else {
            throw ValidationError(
                "Google Play is not configured: set --google-play-package and --google-service-account-file "
                    + "(or SHOPLEDGER_GOOGLE_PLAY_PACKAGE, SHOPLEDGER_GOOGLE_SERVICE_ACCOUNT_FILE)")
        }
        let api = try GooglePlayClient(configuration: settings, logger: logger)
        try await database.withClient(schema: .requireCurrent, logger: logger) { client in
            let report = try await GooglePlaySynchronizer(
                client: api, ledger: LedgerStore(client: client, logger: logger), logger: logger
            ).sync(since: since.date)
            print("\(report)")
            if !report.voidsComplete { throw ExitCode(1) }
        }
    }
}
