import ArgumentParser
import Ledger
import Postgres
import Reports

/// `shopledger reconcile`: runs every ledger invariant against the database and prints what each
/// check examined and which rows failed. Exit status 0 when all pass, 1 when any fails.
struct ReconcileCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reconcile",
        abstract: "Check the ledger's invariants and name the rows that break them.",
        discussion: """
            Runs in one read-only snapshot: postings balance per entry and currency; one purchase entry \
            per purchase; entry postings match their purchase; receivable equals purchases minus refunds; \
            grants equal the replay of their history; live grants are backed by live purchases or are free; \
            refund events are applied; equipped items are owned; append-only triggers are in place; report totals \
            equal the ledger's revenue and refunds postings. \
            Exit status: 0 all passed, 1 a check failed.
            """)

    @OptionGroup var database: DatabaseOptions

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
                    client: client, checks: LedgerInvariants.all + [ReportTotalsCheck(), ReportDayCacheCheck()],
                    failureLimit: failureLimit
                ).run()
            }
        }
        print(json ? try report.json() : report.text)
        if !report.passed { throw ExitCode(1) }
    }
}
