import Foundation
import GooglePlay
import Hummingbird
import Ledger
import Logging
import Shop

/// `POST /api/v1/notifications/google-play`: Google Play's real-time developer notifications as Cloud
/// Pub/Sub pushes them; no user auth, the Google-signed OIDC token in `Authorization` is the proof
/// (``PubSubPushVerifier``: signature, issuer, audience, service account, expiry).
///
/// 401 for a missing or refused token and 400 for a body that is not a push of a notification, or of
/// another package: nothing stored. Otherwise stored as received in `store_notifications`
/// (`google_play:<messageId>`, deduplicated on it) and a voided purchase applied as its purchase's
/// refund (journal, grant, webhooks), as Apple's notifications are: 200 once stored (duplicates too),
/// 5xx only when it could not be stored, so Pub/Sub pushes it again; a ledger step that fails after
/// storing is left to ``NotificationSweeper``. A `ONE_TIME_PRODUCT_PURCHASED` about a token a user posted
/// while its payment was pending records the purchase for that user (``GooglePlayRecording/complete(purchaseToken:)``;
/// the sync does when this cannot). 501 when pushes are not configured.
struct GooglePlayNotificationRoutes {
    let verifier: PubSubPushVerifier?
    let packageName: String?
    /// Records a pending purchase Google completed; nil without Google Play's API.
    let recording: GooglePlayRecording?
    let ledger: LedgerStore
    let metrics: ShopMetrics
    let body: RequestBody

    func register(on group: RouterGroup<some RequestContext>) {
        group.post("notifications/google-play") { request, context in
            try await receive(request, logger: context.logger)
        }
    }

    func receive(_ request: Request, logger: Logger) async throws -> APIBodies.GooglePlayNotificationResult {
        guard let verifier, let packageName else { throw GooglePlayNotConfigured() }
        do {
            try verifier.verify(authorization: request.headers[.authorization])
        } catch {
            metrics.recordNotification(type: "unknown", outcome: "refused")
            throw error
        }
        let push = try await body.json(PubSubPush.self, of: request)
        guard let data = push.data, data.count <= 64 * 1024 else {
            metrics.recordNotification(type: "unknown", outcome: "refused")
            throw APIError(.badRequest, code: "invalid_notification", message: "the push's message.data is not base64")
        }
        let notification: DeveloperNotification
        do {
            notification = try JSONDecoder().decode(DeveloperNotification.self, from: data)
        } catch {
            metrics.recordNotification(type: "unknown", outcome: "refused")
            throw APIError(
                .badRequest, code: "invalid_notification", message: "the message is not a developer notification")
        }
        guard notification.packageName == packageName else {
            metrics.recordNotification(type: "unknown", outcome: "refused")
            throw APIError(
                .badRequest, code: "wrong_package",
                message: "the notification is about another package than this server's")
        }
        // A one-time product's void; a subscription's (productType 1) is not the shop's.
        let void = notification.voidedPurchaseNotification.flatMap { voided in
            voided.productType == 1
                ? nil
                : GooglePlayVoid(
                    purchaseToken: voided.purchaseToken, orderId: voided.orderId, voidedDate: notification.eventDate)
        }
        let type = notification.typeName
        let stored: (notificationUUID: String, storage: NotificationStorage)
        do {
            stored = try await ledger.storeGooglePlayNotification(
                messageId: push.message.messageId, type: type, eventDate: notification.eventDate, void: void,
                payload: data)
        } catch let error as LedgerError {
            metrics.recordNotification(type: type, outcome: "refused")
            throw APIError(.badRequest, code: error.code.rawValue, message: error.message)
        }
        metrics.recordNotification(type: type, outcome: stored.storage.rawValue)
        var ledgerStep = await NotificationRoutes.apply(stored.notificationUUID, ledger: ledger, logger: logger)
        if let product = notification.oneTimeProductNotification, product.notificationType == 1, let recording {
            ledgerStep = await completePending(product.purchaseToken, recording, logger: logger) ?? ledgerStep
        }
        return .init(
            messageId: push.message.messageId, notificationType: type, storage: stored.storage.rawValue,
            ledger: ledgerStep)
    }
}

extension GooglePlayNotificationRoutes {
    /// Records the pending purchase `token` Google says was paid for the user who posted it: `recorded`
    /// (now or before), `conflict` (another user's), `pending` (not now: the sync does), or nil when nobody
    /// claimed it or Google does not say it is paid.
    func completePending(_ token: String, _ recording: GooglePlayRecording, logger: Logger) async -> String? {
        do {
            switch try await recording.complete(purchaseToken: token) {
            case .unclaimed, .stillPending, .cancelled: return nil
            case .recorded(.conflict): return "conflict"
            case .recorded: return "recorded"
            }
        } catch {
            logger.notice(
                "a completed pending Google Play purchase is not recorded yet; the sync does",
                metadata: ["error": "\(error)"])
            return "pending"
        }
    }
}

/// A Google Play request to a server without Google Play configured: 501.
struct GooglePlayNotConfigured: Error, Sendable, CustomStringConvertible {
    var description: String { "Google Play is not configured on this server" }
}
