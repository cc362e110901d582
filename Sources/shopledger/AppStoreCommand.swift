import AppStoreServerAPI
import ArgumentParser
import Foundation
import Ledger
import Logging
import Receipts
import Shop

/// `shopledger appstore ...`: the App Store Server API from the command line.
struct AppStoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "appstore",
        abstract:
            "Ask Apple's App Store Server API: sync notifications and refunds, look up orders, test notifications.",
        subcommands: [AppStoreSyncCommand.self, AppStoreLookupOrderCommand.self, AppStoreTestNotificationCommand.self])
}

/// What the `appstore` commands need: the App Store Server API's settings, and the bundle id and trust
/// roots every signed payload of Apple's answers is verified with. Nothing of `serve`'s HTTP settings.
struct AppStoreClientOptions: ParsableArguments {
    @OptionGroup var verifier: VerifierOptions
    @OptionGroup(title: "App Store Server API") var appStore: AppStoreOptions

    /// The App Store Server API client these settings describe; a clear error when it is not configured.
    func client(logger: Logger) throws -> AppStoreServerAPIClient {
        let receipts = try verifier.configuration()
        guard let settings = try appStore.configuration(bundleId: receipts.bundleId) else {
            throw ValidationError(
                "the App Store Server API is not configured: set --app-store-key-file, --app-store-key-id and "
                    + "--app-store-issuer-id (or SHOPLEDGER_APP_STORE_KEY_FILE, _KEY_ID, _ISSUER_ID)")
        }
        let verifier: ReceiptVerifier
        do {
            verifier = try ReceiptVerifier(configuration: receipts)
        } catch {
            throw ValidationError("receipts: \(error)")
        }
        return try AppStoreServerAPIClient(configuration: settings, prover: verifier, logger: logger)
    }

    /// Runs `body` with the API client and the ledger of `database` (at the current schema), and the logger
    /// both log to.
    func withLedger(
        _ database: DatabaseOptions, _ body: (AppStoreServerAPIClient, LedgerStore, Logger) async throws -> Void
    ) async throws {
        let logger = CommandLogging.logger()
        let api = try client(logger: logger)
        try await database.withClient(schema: .requireCurrent, logger: logger) { client in
            try await body(api, LedgerStore(client: client, logger: logger), logger)
        }
    }
}

/// A point in time on the command line: `YYYY-MM-DD` (midnight UTC) or an ISO 8601 date and time.
struct TimeArgument: ExpressibleByArgument {
    let date: Date

    init?(argument: String) {
        let full = ISO8601DateFormatter()
        let day = ISO8601DateFormatter()
        day.formatOptions = [.withFullDate]
        guard let date = full.date(from: argument) ?? day.date(from: argument) else { return nil }
        self.date = date
    }
}

struct AppStoreSyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Store and apply notifications Apple sent since a date, and record refunds of purchases still live.",
        discussion: """
            Get Notification History of production and the sandbox → the notification inbox (deduplicated \
            on notificationUUID, so running it twice, or beside live notifications, applies each once), page \
            by page; then Get Transaction Info for purchases recorded without a price; then Get Refund \
            History for every user with a live App Store purchase → refunds recorded. Each step (and each \
            environment's history) runs whatever another did, and what it fetched and verified is kept.

            Apple keeps 180 days of notification history in production and 30 in the sandbox: an older \
            --since is moved to the start of each environment's window (an hour inside it), with a warning.

            Prints what it did, each notification it stored now (Apple's delivery did not bring it) with \
            Apple's last delivery attempt, warnings, and each failure with its step, environment and error. \
            Exit code 0 when nothing failed (warnings alone included), 1 when something did (the next run \
            tries it again).
            """)

    @Option(help: "Start of the notification history: YYYY-MM-DD (UTC) or an ISO 8601 time.")
    var since: TimeArgument

    @Option(help: "End of the notification history (default: now).")
    var until: TimeArgument?

    @Flag(help: "Print the sync's report as JSON.")
    var json = false

    @OptionGroup var apple: AppStoreClientOptions
    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        try await apple.withLedger(database) { api, ledger, logger in
            let synchronizer = AppStoreSynchronizer(api: api, ledger: ledger, logger: logger)
            let report = try await synchronizer.sync(since: since.date, until: until?.date ?? Date())
            if json {
                try JSONOutput.print(SyncReportJSON(report))
            } else {
                for line in Self.lines(report) { print(line) }
            }
            if report.failures > 0 { throw ExitCode(1) }
        }
    }

    /// The report for an operator: the counts; warnings; the notifications stored now with Apple's last
    /// attempt to deliver each (why they were missed); what failed. Lists are bounded by the report's.
    static func lines(_ report: AppStoreSynchronizer.Report) -> [String] {
        let format = ISO8601DateFormatter()
        var lines = ["\(report)"]
        lines += report.warnings.map { "warning: \($0)" }
        if !report.storedNotifications.isEmpty {
            lines.append("stored now, missed when Apple sent them (uuid, type, environment, Apple's last attempt):")
            for stored in report.storedNotifications {
                let attempt =
                    stored.lastAttempt.map { $0.result + ($0.date.map { " at " + format.string(from: $0) } ?? "") }
                    ?? "no attempt listed"
                lines.append("  \(stored.uuid) \(stored.type) \(stored.environment) \(attempt)")
            }
            let more = report.notificationsStored - report.storedNotifications.count
            if more > 0 { lines.append("  ... and \(more) more") }
        }
        lines += report.failed.map { "failed: \($0)" }
        let unlisted = report.failures - report.failed.count
        if unlisted > 0 { lines.append("failed: ... and \(unlisted) more (see the log)") }
        return lines
    }
}

struct AppStoreLookupOrderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lookup-order",
        abstract: "Look up an order id from a customer's App Store receipt email (support).")

    @Argument(help: "The order id, e.g. MQ5LXY2K3P.")
    var orderId: String

    @OptionGroup var apple: AppStoreClientOptions

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let api = try apple.client(logger: CommandLogging.logger())
        let lookup = try await api.lookUpOrder(orderId)
        guard lookup.isValid else {
            print("order \(orderId): invalid (Apple does not know it)")
            throw ExitCode(1)
        }
        print(
            "order \(orderId): valid, \(lookup.result.environment), \(lookup.result.transactions.count) transaction(s)")
        let formatter = ISO8601DateFormatter()
        for transaction in lookup.result.transactions {
            let price = transaction.priceMilli.map { "\($0) milli \(transaction.currency ?? "")" } ?? "unpriced"
            let refunded = transaction.revocationDate.map { " refunded \(formatter.string(from: $0))" } ?? ""
            print(
                "  \(transaction.transactionId) \(transaction.productId) bought \(formatter.string(from: transaction.purchaseDate)) "
                    + "\(price) \(transaction.storefront ?? "")\(refunded)")
        }
        if !lookup.result.skipped.isEmpty { print("  (\(lookup.result.skipped.count) of other product types)") }
    }
}

struct AppStoreTestNotificationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test-notification",
        abstract: "Ask Apple to send a TEST notification, then wait until it is in our notification inbox.",
        discussion: """
            Apple sends it to the App Store Server Notifications URL set in App Store Connect; the server \
            there stores it in the notification inbox of the database given here. Polls Apple's status and \
            the inbox every 2 seconds; exit code 0 once it is stored, 1 when it did not arrive in time.
            """)

    @Option(help: "Seconds to wait for the notification.")
    var wait: Double = 60

    func validate() throws {
        guard wait.isFinite, wait > 0, wait <= 3600 else {
            throw ValidationError("--wait must be between 0 and 3600 seconds")
        }
    }

    @OptionGroup var apple: AppStoreClientOptions
    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        try await apple.withLedger(database) { api, ledger, _ in
            let probe = TestNotificationProbe(api: api, ledger: ledger)
            let outcome = try await probe.run(timeout: .seconds(wait)) { token in
                print("Apple accepted the request (token \(token)); waiting up to \(Int(wait)) s")
            }
            switch outcome {
            case .stored(let uuid, _):
                print("the TEST notification \(uuid) arrived at our endpoint and is in the notification inbox")
                return
            case .notArrived(let status):
                let attempts = status?.attempts.map(\.result).joined(separator: ", ") ?? "none reported"
                print(
                    "the TEST notification did not reach our notification inbox in time; Apple's send attempts: \(attempts)"
                )
            }
            throw ExitCode(1)
        }
    }
}
