import Foundation

/// A purchase proven by a verified App Store signed transaction or a verified stub receipt.
///
/// Every field comes from signed data; nothing here was taken from unverified input. Prices are in
/// milliunits (1/1000 of the currency's major unit, as Apple sends them), never floating point.
public struct VerifiedTransaction: Sendable, Hashable {
    /// Which store vouched for the transaction.
    public struct Store: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let appStore = Store(rawValue: "app_store")
        /// Google Play, verified with the Google Play Developer API (the GooglePlay module).
        public static let googlePlay = Store(rawValue: "google_play")
        public static let stub = Store(rawValue: "stub")
    }

    public var store: Store
    public var environment: StoreEnvironment
    /// Unique per (store, environment); the ledger's idempotency key.
    public var transactionId: String
    public var originalTransactionId: String
    public var bundleId: String
    public var productId: String
    public var productType: ProductType
    public var purchaseDate: Date
    public var originalPurchaseDate: Date
    /// When Apple (or the stub minter) signed the data.
    public var signedDate: Date
    /// Price in milliunits of ``currency``; absent in older App Store data.
    public var priceMilli: Int64?
    /// ISO 4217 code; present exactly when ``priceMilli`` is.
    public var currency: String?
    /// ISO 3166-1 alpha-3 storefront country, when present.
    public var storefront: String?
    public var ownershipType: OwnershipType
    public var appAccountToken: UUID?
    /// Present when the transaction was refunded or revoked.
    public var revocationDate: Date?
    /// Apple's `revocationReason`: 0 refunded for another reason, 1 refunded due to an issue in the app.
    public var revocationReason: Int32?
    /// Apple's `revocationType`: `REFUND_FULL`, `REFUND_PRORATED` or `FAMILY_REVOKE`.
    public var revocationType: String?
    /// Apple's `revocationPercentage` in milliunits (prorated refunds).
    public var revocationPercentage: Int32?
    /// SHA-256 of the exact verified evidence: the JWS compact string (App Store) or the canonical
    /// stub text (stubs). 32 bytes.
    public var evidenceSHA256: [UInt8]

    public init(
        store: Store,
        environment: StoreEnvironment,
        transactionId: String,
        originalTransactionId: String,
        bundleId: String,
        productId: String,
        productType: ProductType,
        purchaseDate: Date,
        originalPurchaseDate: Date,
        signedDate: Date,
        priceMilli: Int64? = nil,
        currency: String? = nil,
        storefront: String? = nil,
        ownershipType: OwnershipType = .purchased,
        appAccountToken: UUID? = nil,
        revocationDate: Date? = nil,
        revocationReason: Int32? = nil,
        revocationType: String? = nil,
        revocationPercentage: Int32? = nil,
        evidenceSHA256: [UInt8]
    ) {
        self.store = store
        self.environment = environment
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.bundleId = bundleId
        self.productId = productId
        self.productType = productType
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.signedDate = signedDate
        self.priceMilli = priceMilli
        self.currency = currency
        self.storefront = storefront
        self.ownershipType = ownershipType
        self.appAccountToken = appAccountToken
        self.revocationDate = revocationDate
        self.revocationReason = revocationReason
        self.revocationType = revocationType
        self.revocationPercentage = revocationPercentage
        self.evidenceSHA256 = evidenceSHA256
    }

    /// ``evidenceSHA256`` as 64 lowercase hex digits.
    public var evidenceSHA256Hex: String { Hex.encode(evidenceSHA256) }
}
