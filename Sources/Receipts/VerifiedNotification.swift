import Foundation

/// An App Store Server Notification V2 whose `signedPayload` (and nested `signedTransactionInfo`, when
/// present) verified.
///
/// Every notification type decodes. Only the types the shop acts on (``NotificationType/recognised``)
/// have ``isRecognised`` set; the others should be acknowledged and ignored.
public struct VerifiedNotification: Sendable, Hashable {
    /// Apple's `notificationType` (`REFUND`, `REVOKE`, ...). Extensible.
    public struct NotificationType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let refund = NotificationType(rawValue: "REFUND")
        public static let refundReversed = NotificationType(rawValue: "REFUND_REVERSED")
        public static let refundDeclined = NotificationType(rawValue: "REFUND_DECLINED")
        public static let revoke = NotificationType(rawValue: "REVOKE")
        public static let consumptionRequest = NotificationType(rawValue: "CONSUMPTION_REQUEST")
        public static let test = NotificationType(rawValue: "TEST")

        /// The types the shop acts on. Everything else is reported as ignored.
        public static let recognised: Set<NotificationType> = [
            .refund, .refundReversed, .refundDeclined, .revoke, .consumptionRequest, .test,
        ]
    }

    public var notificationType: NotificationType
    /// Apple's `subtype`, when present (`SUMMARY`, `VOLUNTARY`, ...).
    public var subtype: String?
    /// Apple's dedupe key for the notification (stable across Apple's retries).
    public var notificationUUID: String
    public var signedDate: Date
    /// The environment the notification was sent from (accepted by configuration).
    public var environment: StoreEnvironment
    public var bundleId: String
    /// Present in `data` notifications; Apple's numeric app id.
    public var appAppleId: Int64?
    /// For `CONSUMPTION_REQUEST`: `UNINTENDED_PURCHASE`, `FULFILLMENT_ISSUE`, ...
    public var consumptionRequestReason: String?
    /// The nested `signedTransactionInfo`, verified the same way as a client-posted transaction except
    /// that its product type is not checked (a refund of any product is still news). Absent for `TEST`.
    public var transaction: VerifiedTransaction?
    /// SHA-256 of the exact `signedPayload` string. 32 bytes.
    public var evidenceSHA256: [UInt8]

    public init(
        notificationType: NotificationType,
        subtype: String?,
        notificationUUID: String,
        signedDate: Date,
        environment: StoreEnvironment,
        bundleId: String,
        appAppleId: Int64?,
        consumptionRequestReason: String?,
        transaction: VerifiedTransaction?,
        evidenceSHA256: [UInt8]
    ) {
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.signedDate = signedDate
        self.environment = environment
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.consumptionRequestReason = consumptionRequestReason
        self.transaction = transaction
        self.evidenceSHA256 = evidenceSHA256
    }

    /// ``evidenceSHA256`` as 64 lowercase hex digits.
    public var evidenceSHA256Hex: String { Hex.encode(evidenceSHA256) }

    /// Whether the shop acts on this type; unrecognised notifications are acknowledged and ignored.
    public var isRecognised: Bool { NotificationType.recognised.contains(notificationType) }
}
