import ArgumentParser
import BuildInfo

@main
struct ShopLedgerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shopledger",
        abstract:
            "ShopLedger: verifies in-app purchases, keeps the ledger, serves the shop API, writes revenue reports.",
        // `--version`: the release and the commit, fixed at build time (BuildInfo).
        version: "shopledger \(BuildInfo.description)",
        subcommands: [
            ServeCommand.self, MigrateCommand.self, ReconcileCommand.self, ReportCommand.self, SeedCommand.self,
            StubReceiptCommand.self, StubNotificationCommand.self, VerifyTransactionCommand.self,
            VerifyReceiptCommand.self, AppStoreCommand.self, AppleCommand.self, StandbyCommand.self, AdminCommand.self,
            WebhooksCommand.self,
            CatalogCommand.self,
        ])

    static func main() async {
        do {
            try CommandLogging.bootstrap()
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}
