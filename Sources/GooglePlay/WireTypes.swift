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

/// `google.type.Money` as Google's APIs send it: `currencyCode` (ISO 4217), `units` (an int64 sent as a
/// JSON string) and `nanos` (10⁻⁹ units, of the same sign as `units`).
public struct GoogleMoney: Sendable, Hashable, Decodable {
    public var currencyCode: String
    public var units: Int64
    public var nanos: Int32

    public init(currencyCode: String, units: Int64, nanos: Int32 = 0) {
        self.currencyCode = currencyCode
        self.units = units
        self.nanos = nanos
    }

    enum CodingKeys: String, CodingKey { case currencyCode, units, nanos }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        currencyCode = try c.decodeIfPresent(String.self, forKey: .currencyCode) ?? ""
        units = try c.decodeIfPresent(Int64String.self, forKey: .units)?.value ?? 0
        nanos = try c.decodeIfPresent(Int32.self, forKey: .nanos) ?? 0
    }

    /// The amount in milliunits (thousandths of the currency's unit), when it is one exactly: nil for a
    /// fraction of a milliunit, `nanos` out of Google's range or of the other sign than `units`, or an
    /// amount an Int64 of milliunits cannot hold. Never rounded: a price is booked as stated or not at all.
    public var milliunits: Int64? {
        guard (-999_999_999...999_999_999).contains(nanos), nanos % 1_000_000 == 0,
            !(units > 0 && nanos < 0), !(units < 0 && nanos > 0)
        else { return nil }
        let (whole, overflow) = units.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return nil }
        let (sum, overflowSum) = whole.addingReportingOverflow(Int64(nanos / 1_000_000))
        return overflowSum ? nil : sum
    }
}

/// `orders.get` 200: one Google Play order (the `Order` resource of androidpublisher v3's Orders API),
/// what a purchase's buyer was charged. Only the fields the ledger reads are decoded.
public struct PlayOrder: Sendable, Hashable, Decodable {
    /// `Order.State`.
    public enum State: String, Sendable {
        case pending = "PENDING"
        case processed = "PROCESSED"
        case canceled = "CANCELED"
        case pendingRefund = "PENDING_REFUND"
        case partiallyRefunded = "PARTIALLY_REFUNDED"
        case refunded = "REFUNDED"

        /// Whether the buyer was charged: processed, or refunded (in part, or pending) after it.
        public var charged: Bool {
            switch self {
            case .processed, .pendingRefund, .partiallyRefunded, .refunded: true
            case .pending, .canceled: false
            }
        }
    }

    /// `LineItem`: one product of the order.
    public struct LineItem: Sendable, Hashable, Decodable {
        public struct OneTimePurchaseDetails: Sendable, Hashable, Decodable {
            public var quantity: Int?
        }
        public var productId: String?
        /// What the buyer paid for this line, discounts and taxes taken into account.
        public var total: GoogleMoney?
        public var tax: GoogleMoney?
        public var listingPrice: GoogleMoney?
        public var oneTimePurchaseDetails: OneTimePurchaseDetails?

        public init(productId: String?, total: GoogleMoney?, quantity: Int? = 1) {
            self.productId = productId
            self.total = total
            self.oneTimePurchaseDetails = OneTimePurchaseDetails(quantity: quantity)
        }
    }

    public var orderId: String
    public var purchaseToken: String?
    /// As Google sent it (`STATE_UNSPECIFIED`, or one this client does not know, gives a nil ``state``).
    public var stateValue: String?
    public var lineItems: [LineItem]
    public var total: GoogleMoney?
    public var tax: GoogleMoney?
    public var createTime: String?
    public var lastEventTime: String?

    public var state: State? { stateValue.flatMap(State.init(rawValue:)) }

    enum CodingKeys: String, CodingKey {
        case orderId, purchaseToken, state, lineItems, total, tax, createTime, lastEventTime
    }

    public init(
        orderId: String, purchaseToken: String?, state: String?, lineItems: [LineItem], total: GoogleMoney? = nil
    ) {
        self.orderId = orderId
        self.purchaseToken = purchaseToken
        self.stateValue = state
        self.lineItems = lineItems
        self.total = total
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        orderId = try c.decode(String.self, forKey: .orderId)
        purchaseToken = try c.decodeIfPresent(String.self, forKey: .purchaseToken)
        stateValue = try c.decodeIfPresent(String.self, forKey: .state)
        lineItems = try c.decodeIfPresent([LineItem].self, forKey: .lineItems) ?? []
        total = try c.decodeIfPresent(GoogleMoney.self, forKey: .total)
        tax = try c.decodeIfPresent(GoogleMoney.self, forKey: .tax)
        createTime = try c.decodeIfPresent(String.self, forKey: .createTime)
        lastEventTime = try c.decodeIfPresent(String.self, forKey: .lastEventTime)
    }

    /// What the buyer paid for the one-time purchase `token` of `productId`, in milliunits and its
    /// currency, or why the order does not say (nothing is then booked, nothing guessed): the order must
    /// be that token's, charged, of exactly one line of `productId` and quantity 1, whose total is an
    /// exact, non-negative amount in an ISO 4217 code.
    public func charge(for productId: String, token: String) -> Result<Charge, NotPriced> {
        guard purchaseToken == token else { return .failure(NotPriced("the order is another purchase token's")) }
        guard let state else { return .failure(NotPriced("the order's state is \(stateValue ?? "missing")")) }
        guard state.charged else { return .failure(NotPriced("the order is \(state.rawValue), not charged")) }
        guard lineItems.count == 1, let line = lineItems.first else {
            return .failure(NotPriced("the order has \(lineItems.count) lines, not one"))
        }
        guard line.productId == productId else { return .failure(NotPriced("the order's line is another product")) }
        guard (line.oneTimePurchaseDetails?.quantity ?? 1) == 1 else {
            return .failure(NotPriced("the order's quantity is not 1"))
        }
        guard let total = line.total, let milli = total.milliunits, milli >= 0,
            total.currencyCode.utf8.count == 3, total.currencyCode.utf8.allSatisfy({ (65...90).contains($0) })
        else { return .failure(NotPriced("the order's line states no exact amount in a currency")) }
        return .success(Charge(milliunits: milli, currency: total.currencyCode))
    }

    /// What a buyer paid: milliunits of an ISO 4217 currency.
    public struct Charge: Sendable, Hashable {
        public var milliunits: Int64
        public var currency: String

        public init(milliunits: Int64, currency: String) {
            self.milliunits = milliunits
            self.currency = currency
        }
    }

    /// Why an order prices nothing.
    public struct NotPriced: Error, Sendable, Hashable, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }
}

extension Wire {
    /// `orders.batchget` 200.
    struct BatchGetOrdersResponse: Decodable {
        let orders: [PlayOrder]?
    }
}
