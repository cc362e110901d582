import ArgumentParser
import Ledger
import Postgres
import Reports

/// `shopledger reconcile`: runs every ledger invariant against the database and prints what each
/// check examined and which rows failed. Exit status 0 when all pass, 1 when any fails.
struct ReconcileCommand: AsyncParsableCommand {
    /// Every check `reconcile` runs: the ledger's invariants and the reports' own.
    static let checks: [any ReconciliationCheck] =
        LedgerInvariants.all + [ReportTotalsCheck(), ReportDayCacheCheck()]

    // The help lists the checks themselves, so it names every check that runs and no other.
    static let configuration = CommandConfiguration(
        commandName: "reconcile",
        abstract: "Check the ledger's invariants and name the rows that break them.",
        discussion: "Runs these checks in one read-only snapshot:\n\n"
            + checks.map { "\($0.name): \($0.summary)" }.joined(separator: "\n")
            + "\n\nExit status: 0 all passed, 1 a check failed.")

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
                    client: client, checks: Self.checks,
                    failureLimit: failureLimit
                ).run()
            }
        }
        print(json ? try report.json() : report.text)
        if !report.passed { throw ExitCode(1) }
    }
}
