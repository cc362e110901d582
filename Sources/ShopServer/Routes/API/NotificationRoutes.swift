import Hummingbird
import Ledger
import Logging
import Receipts
import Shop

/// `POST /api/v1/notifications/app-store`: App Store Server Notifications V2 (`{"signedPayload"}`); no user
/// auth, the signature is the proof.
///
/// Admitted first (``NotificationAdmission``: 429 for an address past its refused-notification
/// allowance, 503 when too many are in flight, both before the body is read and a second late); then verified (behind
/// purchases, ``VerificationExecutor``), stored as received (deduplicated on `notificationUUID`), and its
/// refund, reversal or family revoke applied to the ledger. 200 once stored (duplicates too); 400
/// unverifiable; 5xx only when it could not be stored, so Apple retries. When the ledger step fails after
/// storing, the answer is still 200 and ``NotificationSweeper`` applies it later.
struct NotificationRoutes {
    let prover: any PurchaseProver
    let ledger: LedgerStore
    let metrics: ShopMetrics
    let body: RequestBody
    let admission: NotificationAdmission

    func register(on group: RouterGroup<some ClientAddressContext>) {
        group.post("notifications/app-store") { request, context in
            try await receive(request, from: context.clientAddress, logger: context.logger)
        }
    }

    func receive(
        _ request: Request, from address: IPAddress?, logger: Logger
    ) async throws
        -> APIBodies.NotificationResult
    {
        let ticket: NotificationAdmission.Ticket
        do {
            ticket = try await admission.admit(from: address)
        } catch let error as RateLimitedError {
            metrics.recordRateLimited(error.limit)
            throw error
        } catch {
            metrics.recordRateLimited("notifications_in_flight")
            throw error
        }
        // The ticket is held while the notification is read and verified, and handed back with its verdict
        // (storing and applying it are the database's work, bounded by the pool).
        let input: APIBodies.NotificationRequest
        let notification: VerifiedNotification
        do {
            input = try await body.json(APIBodies.NotificationRequest.self, of: request)
        } catch {
            admission.release(ticket, verified: error is CancellationError)
            throw error
        }
        do throws(ReceiptRefusal) {
            notification = try await prover.verifyNotification(input.signedPayload)
            admission.release(ticket, verified: true)
        } catch {
            // Cut short (the deadline passed, the server is stopping): no verdict, so Apple retries.
            admission.release(ticket, verified: error.reason == .cancelled)
            if error.reason == .cancelled { throw CancellationError() }
            metrics.recordNotification(type: "unknown", outcome: "refused")
            throw APIError(.badRequest, code: error.reason.rawValue, message: error.message)
        }
        // A signed notification may carry any type string: only the shop's own become label values.
        let type =
            VerifiedNotification.NotificationType.recognised.contains(notification.notificationType)
            ? notification.notificationType.rawValue : "other"
        let storage: NotificationStorage
        do {
            storage = try await ledger.storeNotification(notification, signedPayload: input.signedPayload)
        } catch let error as LedgerError {
            metrics.recordNotification(type: type, outcome: "refused")
            throw APIError(.badRequest, code: error.code.rawValue, message: error.message)
        }
        metrics.recordNotification(type: type, outcome: storage.rawValue)

        let ledgerStep = await Self.apply(notification.notificationUUID, ledger: ledger, logger: logger)
        return .init(
            notificationUUID: notification.notificationUUID, notificationType: type, storage: storage.rawValue,
            ledger: ledgerStep)
    }
}

extension NotificationRoutes {
    /// Applies a stored notification (Apple's or Google Play's) to the ledger and names the step for the
    /// answer: `none`, `parked`, `applied`, `conflict`, or `pending` when the ledger could not yet (it is
    /// stored: the store must not retry, and the sweeper applies it once the ledger can).
    static func apply(_ notificationUUID: String, ledger: LedgerStore, logger: Logger) async -> String {
        do {
            switch try await ledger.applyNotification(notificationUUID) {
            case nil: return "none"
            case .parked?: return "parked"
            case .applied?, .duplicate?: return "applied"
            case .conflict?: return "conflict"
            }
        } catch {
            logger.warning(
                "notification stored but not applied yet",
                metadata: ["notification": "\(notificationUUID)", "error": "\(error)"])
            return "pending"
        }
    }
}
