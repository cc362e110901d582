import Ledger

/// The one list of reconciliation checks: the ledger's invariants and the reports' own. `shopledger
/// reconcile` and `GET /api/v1/admin/reconciliation` (through `serve`'s hooks) both run it.
public enum ReconciliationChecks {
    public static let all: [any ReconciliationCheck] =
        LedgerInvariants.all + [ReportTotalsCheck(), ReportDayCacheCheck()]
}
