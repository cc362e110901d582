import Foundation

/// A stub receipt: ShopLedger's stand-in for an App Store receipt in development and tests.
///
/// Shaped like a decoded App Store receipt (Apple's field names), as plain text:
///
/// ```text
/// shopledger-stub-receipt/1
/// bundle_id: com.memolease.sesac1
/// environment: Stub
/// receipt_creation_date_ms: 1763790000000
/// in_app:
/// - product_id: com.memolease.sesac1.sprout1
///   transaction_id: stub-0f4e2d8c-3b51-4a57-9d1e-6f0c2b7a9e13
///   original_transaction_id: stub-0f4e2d8c-3b51-4a57-9d1e-6f0c2b7a9e13
///   purchase_date_ms: 1763790000000
///   original_purchase_date_ms: 1763790000000
///   type: Non-Consumable
///   in_app_ownership_type: PURCHASED
///   price: 1200000
///   currency: KRW
/// signature: hmac-sha256:<64 lowercase hex digits>
/// ```
///
/// Rules:
/// - The first line is exactly `shopledger-stub-receipt/1`. Lines end in LF or CRLF; indentation,
///   surrounding spaces and blank lines do not matter. Values are printable ASCII, at most 200 characters.
/// - Top-level keys, each once, before `in_app:`: `bundle_id`, `environment` (must be `Stub`),
///   `receipt_creation_date_ms` (milliseconds since 1970, becomes the signed date).
/// - `in_app:` is followed by one or more entries (at most 100); an entry starts with `- ` and holds, each once:
///   `product_id`, `transaction_id`, `purchase_date_ms` (required); `original_transaction_id`
///   (default: `transaction_id`), `original_purchase_date_ms` (default: `purchase_date_ms`), `type`
///   (default `Non-Consumable`), `in_app_ownership_type` (default `PURCHASED`), `price` (milliunits, an
///   integer ≥ 0) with `currency` (ISO 4217, three letters; both or neither), `app_account_token` (UUID).
/// - Unknown or repeated keys make the receipt malformed, so everything a stub says is covered by its signature.
/// - `signature: hmac-sha256:<hex>`, optional and last, is HMAC-SHA256 keyed with the configured stub
///   secret (UTF-8) over the *canonical text*: the receipt re-rendered exactly as above (defaults filled in,
///   keys in the order shown, two-space indentation, `price`/`currency`/`app_account_token` only when
///   present, every line ending in LF, no signature line). The evidence hash is SHA-256 of the canonical text.
/// - With a secret configured, unsigned and wrongly signed stubs are refused (`invalid_signature`);
///   without one, the signature line is not checked.
public struct StubReceipt: Sendable, Hashable {
    /// One purchase in the receipt (Apple's `in_app` array).
    public struct InAppEntry: Sendable, Hashable {
        public var productId: String
        public var transactionId: String
        public var originalTransactionId: String
        public var purchaseDateMs: Int64
        public var originalPurchaseDateMs: Int64
        public var productType: ProductType
        public var ownershipType: OwnershipType
        public var priceMilli: Int64?
        public var currency: String?
        public var appAccountToken: UUID?

        public init(
            productId: String,
            transactionId: String,
            originalTransactionId: String? = nil,
            purchaseDateMs: Int64,
            originalPurchaseDateMs: Int64? = nil,
            productType: ProductType = .nonConsumable,
            ownershipType: OwnershipType = .purchased,
            priceMilli: Int64? = nil,
            currency: String? = nil,
            appAccountToken: UUID? = nil
        ) {
            self.productId = productId
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId ?? transactionId
            self.purchaseDateMs = purchaseDateMs
            self.originalPurchaseDateMs = originalPurchaseDateMs ?? purchaseDateMs
            self.productType = productType
            self.ownershipType = ownershipType
            self.priceMilli = priceMilli
            self.currency = currency
            self.appAccountToken = appAccountToken
        }
    }

    /// The first line of every stub receipt.
    public static let magicLine = "shopledger-stub-receipt/1"

    public var bundleId: String
    public var environment: StoreEnvironment
    public var creationDateMs: Int64
    public var inApp: [InAppEntry]

    public init(
        bundleId: String, environment: StoreEnvironment = .stub, creationDateMs: Int64, inApp: [InAppEntry]
    ) {
        self.bundleId = bundleId
        self.environment = environment
        self.creationDateMs = creationDateMs
        self.inApp = inApp
    }

    /// The canonical text: what the signature covers and the evidence hash is taken over.
    public var canonicalText: String {
        var lines = [
            Self.magicLine,
            "bundle_id: \(bundleId)",
            "environment: \(environment.rawValue)",
            "receipt_creation_date_ms: \(creationDateMs)",
            "in_app:",
        ]
        for entry in inApp {
            lines.append("- product_id: \(entry.productId)")
            lines.append("  transaction_id: \(entry.transactionId)")
            lines.append("  original_transaction_id: \(entry.originalTransactionId)")
            lines.append("  purchase_date_ms: \(entry.purchaseDateMs)")
            lines.append("  original_purchase_date_ms: \(entry.originalPurchaseDateMs)")
            lines.append("  type: \(entry.productType.rawValue)")
            lines.append("  in_app_ownership_type: \(entry.ownershipType.rawValue)")
            if let price = entry.priceMilli { lines.append("  price: \(price)") }
            if let currency = entry.currency { lines.append("  currency: \(currency)") }
            if let token = entry.appAccountToken {
                lines.append("  app_account_token: \(token.uuidString.lowercased())")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The receipt as text: the canonical text, followed by an HMAC-SHA256 signature line when a secret is given.
    public func text(signedWith secret: String?) -> String {
        let canonical = canonicalText
        guard let secret else { return canonical }
        return canonical + "signature: hmac-sha256:\(StubText.sign(canonical, secret: secret))\n"
    }
}
