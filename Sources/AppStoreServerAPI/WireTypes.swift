import Foundation

/// Apple's JSON bodies, as sent. Every signed field is verified before anything in it is used.
enum Wire {
    struct ErrorBody: Decodable {
        var errorCode: Int?
        var errorMessage: String?
    }

    struct TransactionInfoResponse: Decodable {
        var signedTransactionInfo: String
    }

    /// Get Transaction History v2 and Get Refund History v2.
    struct HistoryResponse: Decodable {
        var signedTransactions: [String]?
        var revision: String?
        var hasMore: Bool?
    }

    struct OrderLookupResponse: Decodable {
        var status: Int
        var signedTransactions: [String]?
    }

    struct NotificationHistoryRequest: Encodable {
        var startDate: Int64
        var endDate: Int64
        var notificationType: String?
        var transactionId: String?
        var onlyFailures: Bool?
    }

    /// Apple's `sendAttemptItem`: one attempt to send a notification to the app's endpoint.
    struct SendAttemptItem: Decodable {
        /// UNIX time in milliseconds.
        var attemptDate: Int64?
        var sendAttemptResult: String?
    }

    /// Get Notification History's answer: `notificationHistoryResponseItem`s, each a signed payload and
    /// Apple's attempts to deliver it (at most six).
    struct NotificationHistoryResponse: Decodable {
        struct Item: Decodable {
            var signedPayload: String
            var sendAttempts: [SendAttemptItem]?
        }
        var notificationHistory: [Item]?
        var hasMore: Bool?
        var paginationToken: String?
    }

    struct SendTestNotificationResponse: Decodable {
        var testNotificationToken: String
    }

    struct CheckTestNotificationResponse: Decodable {
        var signedPayload: String
        var sendAttempts: [SendAttemptItem]?
    }
}
