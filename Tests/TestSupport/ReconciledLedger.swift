import Ledger
import Testing

/// Runs `body` with a ledger on a database of its own (behind `gate`), then runs `checks` over
/// everything it wrote and records an issue naming the failures: the reports' and the seeder's suites
/// pass `ReconciliationChecks.all`.
public func withReconciledLedger<R: Sendable>(
    _ label: String, checks: [any ReconciliationCheck], gate: TestGate = .reports,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (TestDatabase, LedgerStore) async throws -> R
) async throws -> R {
    try await gate.run {
        try await withTestDatabase(label) { db in
            let result = try await body(db, LedgerStore(client: db.client))
            let report = try await Reconciler(client: db.client, checks: checks).run()
            if !report.passed {
                Issue.record("reconciliation failed:\n\(report.text)", sourceLocation: sourceLocation)
            }
            return result
        }
    }
}
