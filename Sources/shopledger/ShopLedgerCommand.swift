import ArgumentParser
import BuildInfo

@main
struct ShopLedgerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shopledger",
        abstract:
            "ShopLedger: verifies in-app purchases, keeps the ledger, serves the shop API, writes revenue reports.",
        // `--version`: the release and the commit, fixed at build time (BuildInfo); `--version --json`
        // adds the schema's migrations (main()).
        version: "shopledger \(BuildInfo.description)",
        subcommands: [
            ServeCommand.self, MigrateCommand.self, ReconcileCommand.self, ReportCommand.self, SeedCommand.self,
            StubReceiptCommand.self, StubNotificationCommand.self, VerifyTransactionCommand.self,
            VerifyReceiptCommand.self, AppStoreCommand.self, AppleCommand.self, StandbyCommand.self, AdminCommand.self,
            WebhooksCommand.self,
            CatalogCommand.self, SmokeCommand.self, BackupsCommand.self, OperatorsCommand.self, GoogleCommand.self,
        ])

    /// Logging first (a bad level or format stops here), then the command line, then the environment's
    /// `SHOPLEDGER_*` names (EnvironmentCheck), then the command. An error that ends it is written as JSON
    /// when JSON logging was asked for (FatalError).
    static func main() async {
        var format = LogFormat.text
        do {
            // `--version --json` (either order), which ArgumentParser's own `--version` does not take.
            if Set(CommandLine.arguments.dropFirst()) == ["--version", "--json"], CommandLine.arguments.count == 3 {
                try JSONOutput.print(VersionJSON())
                return
            }
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
