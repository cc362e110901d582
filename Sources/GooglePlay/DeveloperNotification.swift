import Foundation

/// A Cloud Pub/Sub push request: `{"message": {"data": base64, "messageId", "publishTime", "attributes"},
/// "subscription"}`.
public struct PubSubPush: Sendable, Decodable {
    public struct Message: Sendable, Decodable {
        public var data: String?
        public var messageId: String
        public var publishTime: String?
        public var attributes: [String: String]?
    }
    public var message: Message
    public var subscription: String?

    /// The message's `data`, decoded (standard base64, padded or not).
    public var data: Data? {
        guard var text = message.data else { return nil }
        text = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return Data(base64Encoded: text)
    }
}

/// A Google Play real-time developer notification (the JSON in a Pub/Sub message's `data`): its
/// package, when it happened, and one of a one-time product notification, a voided purchase
/// notification or a test notification (subscriptions are not sold here, and are ignored).
public struct DeveloperNotification: Sendable, Hashable, Decodable {
    public struct OneTimeProduct: Sendable, Hashable, Decodable {
        public var version: String?
        /// 1 `ONE_TIME_PRODUCT_PURCHASED`, 2 `ONE_TIME_PRODUCT_CANCELED`.
        public var notificationType: Int
        public var purchaseToken: String
        public var sku: String
    }

    public struct VoidedPurchaseNotification: Sendable, Hashable, Decodable {
        public var purchaseToken: String
        public var orderId: String?
        /// 1 subscription, 2 one-time product.
        public var productType: Int?
        /// 1 full refund, 2 quantity-based partial refund.
        public var refundType: Int?
    }

    public struct TestNotification: Sendable, Hashable, Decodable {
        public var version: String?
    }

    public var version: String?
    public var packageName: String
    public var eventTimeMillis: Int64
    public var oneTimeProductNotification: OneTimeProduct?
    public var voidedPurchaseNotification: VoidedPurchaseNotification?
    public var testNotification: TestNotification?

    public var eventDate: Date { Date(timeIntervalSince1970: TimeInterval(eventTimeMillis) / 1000) }

    enum CodingKeys: String, CodingKey {
        case version, packageName, eventTimeMillis, oneTimeProductNotification, voidedPurchaseNotification
        case testNotification
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        version = try c.decodeIfPresent(String.self, forKey: .version)
        packageName = try c.decode(String.self, forKey: .packageName)
        eventTimeMillis = try c.decode(Int64String.self, forKey: .eventTimeMillis).value
        oneTimeProductNotification = try c.decodeIfPresent(OneTimeProduct.self, forKey: .oneTimeProductNotification)
        voidedPurchaseNotification = try c.decodeIfPresent(
            VoidedPurchaseNotification.self, forKey: .voidedPurchaseNotification)
        testNotification = try c.decodeIfPresent(TestNotification.self, forKey: .testNotification)
    }

    /// The notification's type as a label: `ONE_TIME_PRODUCT_PURCHASED`, `ONE_TIME_PRODUCT_CANCELED`,
    /// `VOIDED_PURCHASE`, `TEST` or `OTHER`.
    public var typeName: String {
        if let product = oneTimeProductNotification {
            switch product.notificationType {
            case 1: return "ONE_TIME_PRODUCT_PURCHASED"
            case 2: return "ONE_TIME_PRODUCT_CANCELED"
            default: return "OTHER"
            }
        }
        if voidedPurchaseNotification != nil { return "VOIDED_PURCHASE" }
        if testNotification != nil { return "TEST" }
        return "OTHER"
    }
}
