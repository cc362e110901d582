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
            BackupsCommand.self,
        ])

    /// Logging first (a bad level or format stops here), then the command line, then the environment's
    /// `SHOPLEDGER_*` names (EnvironmentCheck), then the command. An error that ends it is written as JSON
    /// when JSON logging was asked for (FatalError).
    static func main() async {
        var format = LogFormat.text
        do {
            format = (try? CommandLogging.format(arguments: Array(CommandLine.arguments.dropFirst()))) ?? .text
            try CommandLogging.bootstrap()
            var command = try parseAsRoot()
            try EnvironmentCheck.check()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            FatalError.exit(with: error, format: format)
        }
    }
}
