import AppStoreServerAPI
import Ledger
import Prometheus
import Receipts
import Webhooks

/// The counters that exist at 0 from the start. Prometheus knows no value for a series nobody has
/// exported yet, so `rate()` and `increase()` over a counter that first appears with its first event
/// (a refusal, a shed connection) miss that event, and an alert on it stays silent the first time it
/// matters. Every label value the server records on its own is registered here; a value met later
/// (an Apple status, a notification type Apple adds) still appears with its first event.
extension ShopMetrics {
    static let purchaseOutcomes = ["recorded", "duplicate", "conflict"]
    /// The prover's verdicts, a proof missing, and the ledger's refusals of a proven purchase.
    static var refusalReasons: [String] {
        ReceiptRefusal.Reason.verdicts.map(\.rawValue)
            + ["proof_required"]
            + [LedgerError.Code.unknownProduct, .productRetired, .accountTokenMismatch].map(\.rawValue)
    }
    static let rateLimits = [
        "purchases", "proofs_in_flight", "refused_proofs", "restore", "price_lookups", "notifications_in_flight",
        "refused_notifications",
    ]
    static let shedReasons = ["displaced", "refused"]
    static var notificationOutcomes: [String] { ["stored", "duplicate", "refused"] }
    static let webhookOutcomes = ["delivered", "failed", "gave_up", "unrecorded"]
    /// The codes an App Store call that failed for good is counted under.
    static var appleFailureCodes: [String] {
        [AppStoreServerAPIError.Code]([
            .apiError, .rateLimited, .timeout, .transport, .unexpectedResponse, .unverifiedPayload,
        ]).map(\.rawValue)
    }
    static let syncResults = ["ok", "partial", "failed"]
    static let syncKinds = ["notifications_stored", "notification_events", "refunds", "prices"]

    func registerStartingSeries() {
        func counters(_ descriptor: MetricNameDescriptor, _ labels: [[(String, String)]]) {
            for set in labels { _ = registry.makeCounter(descriptor: descriptor, labels: set) }
        }
        counters(Self.purchases, Self.purchaseOutcomes.map { [("outcome", $0)] })
        counters(Self.refusals, Self.refusalReasons.map { [("reason", $0)] })
        counters(Self.rateLimited, Self.rateLimits.map { [("limit", $0)] })
        counters(Self.shedConnections, Self.shedReasons.map { [("why", $0)] })
        counters(
            Self.notifications,
            VerifiedNotification.NotificationType.recognised.map(\.rawValue).sorted().flatMap { type in
                Self.notificationOutcomes.map { [("type", type), ("outcome", $0)] }
            })
        counters(
            Self.webhookAttempts,
            WebhookEventType.allCases.flatMap { type in
                Self.webhookOutcomes.map { [("type", type.rawValue), ("outcome", $0)] }
            })
        counters(
            Self.appleErrors,
            RateLimits.Endpoint.allCases.flatMap { endpoint in
                Self.appleFailureCodes.map { [("endpoint", endpoint.rawValue), ("code", $0)] }
            })
        counters(Self.syncRuns, Self.syncResults.map { [("result", $0)] })
        counters(Self.syncApplied, Self.syncKinds.map { [("kind", $0)] })
        counters(Self.syncFailures, [[]])
        counters(Self.sweeps, [[("result", "ok")], [("result", "failed")]])
        counters(Self.sweepApplied, [[]])
        counters(Self.sweepFailures, [[]])
        counters(Self.googleFetches, [[("result", "ok")], [("result", "failed")]])
        // No backup known until BackupWatcher's first read says otherwise.
        recordLastBackup(stoppedAt: nil)
    }
}
