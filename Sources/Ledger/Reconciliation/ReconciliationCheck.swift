import Postgres

/// One invariant that `Reconciler` runs. The ledger's own are `LedgerInvariants.all`; other modules
/// add theirs by conforming a type and passing it to `Reconciler(client:checks:)` (the Reports
/// module's "report totals equal ledger totals" is meant to arrive this way).
public protocol ReconciliationCheck: Sendable {
    /// A stable machine name, e.g. `postings_balance`.
    var name: String { get }
    /// What holds when the check passes, in a sentence.
    var summary: String { get }
    /// Runs the check inside the reconciler's read-only snapshot transaction, listing at most
    /// `failureLimit` failures (and counting all of them).
    func run(on connection: PostgresConnection, failureLimit: Int) async throws -> ReconciliationCheckResult
}

/// A check written as two SQL queries: one counting what it examines, one listing failures as
/// `(id text, detail text)` rows.
public struct SQLReconciliationCheck: ReconciliationCheck {
    public let name: String
    public let summary: String
    /// What the count counts, plural ("journal entries").
    public let examinedWhat: String
    /// Trusted SQL returning one integer: how many things the check examines.
    public let examinedSQL: String
    /// Trusted SQL returning the failures as rows of `id text, detail text`.
    public let failuresSQL: String

    public init(name: String, summary: String, examinedWhat: String, examinedSQL: String, failuresSQL: String) {
        self.name = name
        self.summary = summary
        self.examinedWhat = examinedWhat
        self.examinedSQL = examinedSQL
        self.failuresSQL = failuresSQL
    }

    public func run(on connection: PostgresConnection, failureLimit: Int) async throws -> ReconciliationCheckResult {
        let examined = try await connection.query(PostgresQuery(unsafeSQL: examinedSQL)).single().decode(
            Int.self, at: 0)
        let rows = try await connection.query(
            """
            SELECT count(*) OVER () AS total, f.id::text, f.detail::text
            FROM (\(unsafeSQL: failuresSQL)) AS f (id, detail)
            ORDER BY f.id, f.detail
            LIMIT \(max(1, failureLimit))
            """)
        let failures = try rows.map { row in
            let id = try row.decode(String?.self, column: "id")
            let detail = try row.decode(String?.self, column: "detail")
            return ReconciliationFailure(id: id ?? "(null)", detail: detail ?? "")
        }
        let total = try rows.first?.decode(Int.self, column: "total") ?? 0
        return ReconciliationCheckResult(
            name: name, summary: summary, examined: examined, examinedWhat: examinedWhat, failureCount: total,
            failures: failures)
    }
}
