import Foundation

/// The JSON payload of an App Store Server Notification V2 (`ResponseBodyV2DecodedPayload`).
struct NotificationPayload: Decodable {
    struct DataBody: Decodable {
        var environment: String?
        var appAppleId: Int64?
        var bundleId: String?
        var signedTransactionInfo: String?
        var consumptionRequestReason: String?
    }

    /// The app identity carried by `summary` and `appData` bodies alike.
    struct AppIdentity: Decodable {
        var environment: String?
        var appAppleId: Int64?
        var bundleId: String?
    }

    struct ExternalPurchaseToken: Decodable {
        var externalPurchaseId: String?
        var appAppleId: Int64?
        var bundleId: String?
    }

    var notificationType: String?
    var subtype: String?
    var notificationUUID: String?
    var signedDate: Date?
    var data: DataBody?
    var summary: AppIdentity?
    var externalPurchaseToken: ExternalPurchaseToken?
    var appData: AppIdentity?

    /// The bundle id, environment and app id the notification is about, from whichever body it carries
    /// (`data`, else `summary`, else `externalPurchaseToken`, else `appData`, as Apple's library does).
    var subject: (bundleId: String?, environment: String?, appAppleId: Int64?)? {
        if let data { return (data.bundleId, data.environment, data.appAppleId) }
        if let summary { return (summary.bundleId, summary.environment, summary.appAppleId) }
        if let token = externalPurchaseToken {
            // External purchase tokens carry no environment; sandbox ids start with "SANDBOX".
            let sandbox = token.externalPurchaseId?.hasPrefix("SANDBOX") ?? false
            return (
                token.bundleId, sandbox ? StoreEnvironment.sandbox.rawValue : StoreEnvironment.production.rawValue,
                token.appAppleId
            )
        }
        if let appData { return (appData.bundleId, appData.environment, appData.appAppleId) }
        return nil
    }
}
