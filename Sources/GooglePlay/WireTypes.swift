import Foundation

/// Google's JSON, as the Google Play Developer API (androidpublisher v3) and its OAuth token endpoint
/// document it. Int64 values (`purchaseTimeMillis`, ...) arrive as JSON strings.
enum Wire {
    /// `POST token_uri` 200: `{"access_token", "expires_in", "token_type"}`.
    struct TokenResponse: Decodable {
        let accessToken: String
        let expiresIn: Int
        let tokenType: String?

        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token"
            case expiresIn = "expires_in"
            case tokenType = "token_type"
        }
    }

    /// The token endpoint's refusal: `{"error", "error_description"}` (OAuth 2.0, RFC 6749 §5.2).
    struct TokenError: Decodable {
        let error: String?
        let errorDescription: String?

        enum CodingKeys: String, CodingKey {
            case error
            case errorDescription = "error_description"
        }
    }

    /// Google APIs' error body: `{"error": {"code", "message", "status", "errors": [...]}}`.
    struct ErrorBody: Decodable {
        struct Detail: Decodable {
            let code: Int?
            let message: String?
            let status: String?
        }
        let error: Detail
    }

    /// `purchases.voidedpurchases.list` 200.
    struct VoidedPurchasesListResponse: Decodable {
        struct TokenPagination: Decodable {
            let nextPageToken: String?
        }
        let voidedPurchases: [VoidedPurchase]?
        let tokenPagination: TokenPagination?
    }
}

/// An Int64 Google sends as a JSON string (`"1763000000000"`), or a number.
struct Int64String: Decodable, Sendable, Hashable {
    let value: Int64

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self), let value = Int64(text) {
            self.value = value
        } else {
            self.value = try container.decode(Int64.self)
        }
    }
}

/// `purchases.products.get` 200: a one-time product purchase (the `ProductPurchase` resource). It carries
/// no price.
public struct ProductPurchase: Sendable, Hashable, Decodable {
    public enum PurchaseState: Int, Sendable {
        case purchased = 0
        case cancelled = 1
        case pending = 2
    }

    public var kind: String?
    public var purchaseTimeMillis: Int64
    /// 0 purchased, 1 cancelled, 2 pending (any other value is kept as it came, and not recorded).
    public var purchaseStateValue: Int
    /// 0 yet to be consumed, 1 consumed.
    public var consumptionState: Int?
    /// 0 yet to be acknowledged, 1 acknowledged.
    public var acknowledgementState: Int?
    /// May be absent when there is no order (Google's reference says so).
    public var orderId: String?
    /// Absent for a real purchase; 0 test (a license tester), 1 promo, 2 rewarded.
    public var purchaseType: Int?
    public var purchaseToken: String?
    public var productId: String?
    public var quantity: Int?
    public var obfuscatedExternalAccountId: String?
    public var obfuscatedExternalProfileId: String?
    /// ISO 3166-1 alpha-2 region of the buyer's billing country.
    public var regionCode: String?

    public var purchaseState: PurchaseState? { PurchaseState(rawValue: purchaseStateValue) }
    public var purchaseDate: Date { Date(timeIntervalSince1970: TimeInterval(purchaseTimeMillis) / 1000) }
    /// A license tester's purchase: recorded as the sandbox is, never as money.
    public var isTest: Bool { purchaseType == 0 }
    public var isAcknowledged: Bool { acknowledgementState == 1 }
    public var isConsumed: Bool { consumptionState == 1 }

    enum CodingKeys: String, CodingKey {
        case kind, purchaseTimeMillis, purchaseState, consumptionState, acknowledgementState, orderId, purchaseType
        case purchaseToken, productId, quantity, obfuscatedExternalAccountId, obfuscatedExternalProfileId, regionCode
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        kind = try c.decodeIfPresent(String.self, forKey: .kind)
        purchaseTimeMillis = try c.decode(Int64String.self, forKey: .purchaseTimeMillis).value
        purchaseStateValue = try c.decodeIfPresent(Int.self, forKey: .purchaseState) ?? 0
        consumptionState = try c.decodeIfPresent(Int.self, forKey: .consumptionState)
        acknowledgementState = try c.decodeIfPresent(Int.self, forKey: .acknowledgementState)
        orderId = try c.decodeIfPresent(String.self, forKey: .orderId)
        purchaseType = try c.decodeIfPresent(Int.self, forKey: .purchaseType)
        purchaseToken = try c.decodeIfPresent(String.self, forKey: .purchaseToken)
        productId = try c.decodeIfPresent(String.self, forKey: .productId)
        quantity = try c.decodeIfPresent(Int.self, forKey: .quantity)
        obfuscatedExternalAccountId = try c.decodeIfPresent(String.self, forKey: .obfuscatedExternalAccountId)
        obfuscatedExternalProfileId = try c.decodeIfPresent(String.self, forKey: .obfuscatedExternalProfileId)
        regionCode = try c.decodeIfPresent(String.self, forKey: .regionCode)
    }
}

/// One entry of `purchases.voidedpurchases.list`: a purchase Google cancelled, refunded or charged back.
public struct VoidedPurchase: Sendable, Hashable, Decodable {
    public var kind: String?
    public var purchaseToken: String
    public var orderId: String?
    public var purchaseTimeMillis: Int64?
    public var voidedTimeMillis: Int64
    /// 0 user, 1 developer, 2 Google.
    public var voidedSource: Int?
    /// 0 other, 1 remorse, 2 not received, 3 defective, 4 accidental purchase, 5 fraud, 6 friendly fraud,
    /// 7 chargeback.
    public var voidedReason: Int?
    public var voidedQuantity: Int?

    public var voidedDate: Date { Date(timeIntervalSince1970: TimeInterval(voidedTimeMillis) / 1000) }

    enum CodingKeys: String, CodingKey {
        case kind, purchaseToken, orderId, purchaseTimeMillis, voidedTimeMillis, voidedSource, voidedReason
        case voidedQuantity
    }

    public init(
        purchaseToken: String, orderId: String?, voidedTimeMillis: Int64, voidedSource: Int? = nil,
        voidedReason: Int? = nil
    ) {
        self.purchaseToken = purchaseToken
        self.orderId = orderId
        self.voidedTimeMillis = voidedTimeMillis
        self.voidedSource = voidedSource
        self.voidedReason = voidedReason
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        kind = try c.decodeIfPresent(String.self, forKey: .kind)
        purchaseToken = try c.decode(String.self, forKey: .purchaseToken)
        orderId = try c.decodeIfPresent(String.self, forKey: .orderId)
        purchaseTimeMillis = try c.decodeIfPresent(Int64String.self, forKey: .purchaseTimeMillis)?.value
        voidedTimeMillis = try c.decode(Int64String.self, forKey: .voidedTimeMillis).value
        voidedSource = try c.decodeIfPresent(Int.self, forKey: .voidedSource)
        voidedReason = try c.decodeIfPresent(Int.self, forKey: .voidedReason)
        voidedQuantity = try c.decodeIfPresent(Int.self, forKey: .voidedQuantity)
    }
}
