import Ledger

/// What other modules plug into the server, composed by `shopledger serve` (the composition root), so
/// that ShopServer needs none of them: the checks `GET /api/v1/admin/reconciliation` runs and what the
/// periodic first-purchase catch-up invalidates, and who is told that the server listens.
public struct ServerHooks: Sendable {
    /// The admin API's reconciliation; `serve` passes `ReconciliationChecks.all` (Reports), the list
    /// `shopledger reconcile` runs.
    public var reconciliationChecks: [any ReconciliationCheck]
    /// Given to the catch-up `serve` runs every ``ServerConfiguration/firstPurchaseCatchUpInterval``
    /// (`serve` passes the reports' day cache's, `.reportDays`); nil: no periodic catch-up (the reports
    /// catch up before each one).
    public var firstPurchaseInvalidation: FirstPurchaseCatchUp.Invalidation?
    /// Called once the HTTP server listens on its port (`serve` tells systemd it is ready).
    public var serverRunning: @Sendable () async -> Void = {}

    /// The ledger's own checks and no catch-up: what a server built without `serve`'s hooks runs.
    public static let ledgerOnly = ServerHooks(
        reconciliationChecks: LedgerInvariants.all, firstPurchaseInvalidation: nil)

    public init(
        reconciliationChecks: [any ReconciliationCheck], firstPurchaseInvalidation: FirstPurchaseCatchUp.Invalidation?
    ) {
        self.reconciliationChecks = reconciliationChecks
        self.firstPurchaseInvalidation = firstPurchaseInvalidation
    }
}
