import Foundation
import Postgres

/// Runs the ledger's invariants (and any checks other modules add) against the database, all in
/// one read-only REPEATABLE READ transaction so every check sees the same snapshot.
///
/// `LedgerInvariants.all` covers the ledger invariants listed in docs/ledger.md. The remaining one, "report
/// totals equal ledger totals", belongs to the Reports module: it provides a `ReconciliationCheck`
/// (e.g. named `report_totals_match_ledger`) and the caller passes `LedgerInvariants.all + [that]`.
public struct Reconciler: Sendable {
    let client: PostgresClient
    public let checks: [any ReconciliationCheck]
    /// How many failures each check lists (all are counted).
    public let failureLimit: Int

    public init(
        client: PostgresClient, checks: [any ReconciliationCheck] = LedgerInvariants.all, failureLimit: Int = 50
    ) {
        self.client = client
        self.checks = checks
        self.failureLimit = failureLimit
    }

    public func run() async throws -> ReconciliationReport {
        let checks = self.checks
        let failureLimit = self.failureLimit
        let results = try await client.withTransaction(.init(isolation: .repeatableRead, readOnly: true)) {
            connection in
            var results: [ReconciliationCheckResult] = []
            for check in checks {
                results.append(try await check.run(on: connection, failureLimit: failureLimit))
            }
            return results
        }
        return ReconciliationReport(checkedAt: Date(), checks: results)
    }
}
