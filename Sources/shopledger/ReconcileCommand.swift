import ArgumentParser
import Ledger
import Postgres
import Reports

/// `shopledger reconcile`: runs every ledger invariant against the database and prints what each
/// check examined and which rows failed. Exit status 0 when all pass, 1 when any fails.
/// `shopledger reconcile apple --date D` compares Apple's sales report of a day instead; the bare
/// command (and `reconcile ledger`) runs the invariants as it always has.
struct ReconcileCommand: AsyncParsableCommand {
    /// Every check `reconcile` runs: the ledger's invariants and the reports' own (also what
    /// `GET /api/v1/admin/reconciliation` runs in `serve`).
    static let checks = ReconciliationChecks.all

    /// The help lists the checks themselves, so it names every check that runs and no other.
    static let checksDiscussion =
        "Runs these checks in one read-only snapshot:\n\n"
        + checks.map { "\($0.name): \($0.summary)" }.joined(separator: "\n")
        + "\n\nExit status: 0 all passed, 1 a check failed."

    static let configuration = CommandConfiguration(
        commandName: "reconcile",
        abstract: "Check the ledger's invariants and name the rows that break them.",
        discussion: checksDiscussion
            + "\n\nWithout a subcommand it runs `ledger`, taking its options (--json, --max-failures N and the "
            + "database options: `shopledger reconcile ledger --help`). `shopledger reconcile apple --date D` "
            + "compares Apple's Summary Sales Report of day D instead.",
        subcommands: [ReconcileLedgerCommand.self, ReconcileAppleCommand.self],
        defaultSubcommand: ReconcileLedgerCommand.self)
}

/// `shopledger reconcile` (or `reconcile ledger`): the ledger's invariants.
struct ReconcileLedgerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger",
        abstract: "Check the ledger's invariants (the default: `shopledger reconcile` runs this).",
        discussion: ReconcileCommand.checksDiscussion)

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    @Flag(help: "Print the report as JSON.")
    var json = false

    @Option(name: .customLong("max-failures"), help: "How many failing rows to list per check (all are counted).")
    var maxFailures = 50

    func validate() throws {
        guard maxFailures > 0 else { throw ValidationError("--max-failures must be at least 1.") }
    }

    func run() async throws {
        let failureLimit = maxFailures
        let report = try await database.withClient(schema: .requireCurrent) { client in
            try await retryingRecoveryConflicts {
                try await Reconciler(
                    client: client, checks: ReconcileCommand.checks,
                    failureLimit: failureLimit
                ).run()
            }
        }
        print(json ? try report.json() : report.text)
        if !report.passed { throw ExitCode(1) }
    }
}
