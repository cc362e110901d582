import Foundation
import Ledger
import Postgres

/// What the ledger holds after a fault, compared with what the clients saw.
struct LedgerAudit: CustomStringConvertible {
    /// Purchases the clients saw acknowledged (200).
    var acknowledged = 0
    /// Acknowledged, but not in `purchases`: must be 0.
    var lost: [String] = []
    /// In `purchases` more than once: must be empty (the unique key forbids it).
    var duplicated: [String] = []
    /// In `purchases` though no client sent it: must be empty.
    var unknown: [String] = []
    /// Failed or unanswered, yet recorded (the commit happened, the answer did not reach the client):
    /// allowed; a retry of the same transaction answers `duplicate`.
    var recordedThoughFailed = 0
    /// Failed and not recorded.
    var notRecorded = 0
    var reconcilerPassed = false
    var reconcilerReport = ""
    /// Names of the invariants that failed.
    var failedChecks: [String] = []

    var description: String {
        "acknowledged=\(acknowledged) lost=\(lost.count) duplicated=\(duplicated.count) unknown=\(unknown.count) "
            + "failed-but-recorded=\(recordedThoughFailed) failed-not-recorded=\(notRecorded) reconcile=\(reconcilerPassed ? "passed" : "FAILED")"
    }

    /// Compares `attempts` with the `purchases` table and runs every ledger invariant.
    static func audit(_ attempts: [PurchaseAttempt], client: PostgresClient) async throws -> LedgerAudit {
        var counts: [String: Int] = [:]
        for row in try await client.query("SELECT transaction_id, count(*) FROM purchases GROUP BY transaction_id") {
            let (transaction, count) = try row.decode((String, Int).self)
            counts[transaction] = count
        }
        var audit = LedgerAudit()
        var sent = Set<String>()
        var acknowledged = Set<String>()
        for attempt in attempts {
            sent.insert(attempt.request.transactionId)
            if attempt.acknowledged { acknowledged.insert(attempt.request.transactionId) }
        }
        audit.acknowledged = acknowledged.count
        audit.lost = acknowledged.filter { counts[$0] == nil }.sorted()
        audit.duplicated = counts.filter { $0.value > 1 }.map(\.key).sorted()
        audit.unknown = counts.keys.filter { !sent.contains($0) }.sorted()
        for transaction in sent.subtracting(acknowledged) {
            if counts[transaction] != nil { audit.recordedThoughFailed += 1 } else { audit.notRecorded += 1 }
        }
        let report = try await Reconciler(client: client).run()
        audit.reconcilerPassed = report.passed
        audit.reconcilerReport = report.text
        audit.failedChecks = report.failedChecks.map(\.name)
        return audit
    }
}
