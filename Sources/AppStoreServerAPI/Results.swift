import Foundation
import Receipts

/// Verified transactions from one of Apple's answers.
public struct VerifiedTransactions: Sendable, Hashable {
    /// The environment that answered (production, or the sandbox after production did not know the id).
    public var environment: StoreEnvironment
    /// Every transaction that verified and is of a product type the verifier accepts.
    public var transactions: [VerifiedTransaction]
    /// Authentic transactions of product types the shop does not sell (the verifier's
    /// `unsupported_product_type`, which it decides only after chain and signature verified). Not used.
    public var skipped: [ReceiptRefusal]

    public init(environment: StoreEnvironment, transactions: [VerifiedTransaction], skipped: [ReceiptRefusal]) {
        self.environment = environment
        self.transactions = transactions
        self.skipped = skipped
    }
}

/// Look Up Order ID's answer.
public struct OrderLookup: Sendable, Hashable {
    /// Apple's `status`: true for 0 (valid), false for 1 (invalid order id).
    public var isValid: Bool
    public var result: VerifiedTransactions
}

/// One of Apple's attempts to send a notification to the app's endpoint (Apple's `sendAttemptItem`).
public struct NotificationSendAttempt: Sendable, Hashable {
    /// When Apple tried (`attemptDate`), when Apple says.
    public var date: Date?
    /// `SUCCESS`, `TIMED_OUT`, `TLS_ISSUE`, `NO_RESPONSE`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`, ...
    /// (`sendAttemptResult`; `UNKNOWN` when Apple sends none).
    public var result: String

    public init(date: Date?, result: String) {
        self.date = date
        self.result = result
    }
}

/// A verified notification from Get Notification History, with its exact signed payload (what the
/// notification inbox stores) and Apple's record of delivering it.
public struct NotificationHistoryEntry: Sendable, Hashable {
    public var notification: VerifiedNotification
    public var signedPayload: String
    /// Apple's attempts to send it to our endpoint (`sendAttempts`), as Apple lists them: the first
    /// attempt and up to five retries (production retries when our endpoint does not answer 200).
    public var sendAttempts: [NotificationSendAttempt]

    public init(notification: VerifiedNotification, signedPayload: String, sendAttempts: [NotificationSendAttempt]) {
        self.notification = notification
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }

    /// The latest attempt: the latest dated (Apple does not promise an order), the later listed among
    /// equal or missing dates; nil when Apple lists none.
    public var lastAttempt: NotificationSendAttempt? {
        sendAttempts.enumerated().max {
            ($0.element.date ?? .distantPast, $0.offset) < ($1.element.date ?? .distantPast, $1.offset)
        }?.element
    }
}

/// Get Test Notification Status's answer.
public struct TestNotificationStatus: Sendable, Hashable {
    public typealias Attempt = NotificationSendAttempt
    /// The test notification Apple sent (verified).
    public var notification: VerifiedNotification
    public var attempts: [Attempt]

    /// Whether Apple reports a successful delivery to our endpoint.
    public var delivered: Bool { attempts.contains { $0.result == "SUCCESS" } }
}
