import Foundation
import Postgres
import Receipts

/// A verified store transaction recorded for a user.
public struct Purchase: Sendable, Hashable {
    public var uid: String
    public var store: VerifiedTransaction.Store
    public var environment: StoreEnvironment
    /// Unique per (store, environment).
    public var transactionId: String
    public var originalTransactionId: String
    public var productId: String
    /// The catalog item the product id maps to.
    public var item: ItemID
    /// The set of accounts its money goes to: `production` for App Store Production, otherwise
    /// `sandbox`, `xcode`, `localtesting` or `stub`.
    public var book: String
    public var purchaseDate: Date
    /// What the store said was paid; nil when the store did not say. Not the book of record (the
    /// store's financial reports are): an estimate until reconciled with them.
    public var price: Money?
    public var storefront: String?
    public var ownershipType: OwnershipType
    public var appAccountToken: UUID?
    public var signedDate: Date
    /// SHA-256 of the verified evidence, 64 lowercase hex digits.
    public var evidenceSHA256Hex: String
    public var recordedAt: Date
    public var state: PurchaseState

    public init(
        uid: String, store: VerifiedTransaction.Store, environment: StoreEnvironment, transactionId: String,
        originalTransactionId: String, productId: String, item: ItemID, book: String, purchaseDate: Date,
        price: Money?, storefront: String?, ownershipType: OwnershipType, appAccountToken: UUID?, signedDate: Date,
        evidenceSHA256Hex: String, recordedAt: Date, state: PurchaseState
    ) {
        self.uid = uid
        self.store = store
        self.environment = environment
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.item = item
        self.book = book
        self.purchaseDate = purchaseDate
        self.price = price
        self.storefront = storefront
        self.ownershipType = ownershipType
        self.appAccountToken = appAccountToken
        self.signedDate = signedDate
        self.evidenceSHA256Hex = evidenceSHA256Hex
        self.recordedAt = recordedAt
        self.state = state
    }

    /// Whether it backs its item now.
    public var isLive: Bool { state == .live }
}

extension Purchase {
    /// The columns `init(row:)` reads, for `FROM purchases p`.
    static let selectColumns = """
        p.uid, p.store, p.environment, p.transaction_id, p.original_transaction_id, p.product_id,
        p.item_kind, p.item_index, p.book, p.purchased_at, \(learnedPriceColumns),
        p.ownership, p.app_account_token, p.signed_at, encode(p.evidence_sha256, 'hex') AS evidence_hex,
        p.recorded_at, \(stateExpression) AS state
        """

    /// The state of purchase `p`: the kind of its latest journal entry that has one (a price learned
    /// later leaves the state as it was).
    static let stateExpression = """
        coalesce((SELECT purchase_state_after(j.kind)
                  FROM journal_entries j
                  WHERE j.store = p.store AND j.environment = p.environment AND j.transaction_id = p.transaction_id
                    AND j.kind <> 'price_learned'
                  ORDER BY j.seq DESC LIMIT 1), 'live')
        """

    /// Purchase `p`'s price, currency and storefront: its own, or for a purchase recorded without them
    /// the ones learned later (`purchase_prices`, looked up only then: COALESCE stops at its first
    /// non-null argument).
    static let learnedPriceColumns = """
        coalesce(p.price_milli, (SELECT l.price_milli FROM purchase_prices l
                                 WHERE l.transaction_id = p.transaction_id AND l.store = p.store
                                   AND l.environment = p.environment)) AS price_milli,
        coalesce(p.currency, (SELECT l.currency FROM purchase_prices l
                              WHERE l.transaction_id = p.transaction_id AND l.store = p.store
                                AND l.environment = p.environment)) AS currency,
        coalesce(p.storefront, (SELECT l.storefront FROM purchase_prices l
                                WHERE l.transaction_id = p.transaction_id AND l.store = p.store
                                  AND l.environment = p.environment)) AS storefront
        """

    init(row: PostgresRow) throws {
        let kindText = try row.decode(String.self, column: "item_kind")
        let stateText = try row.decode(String.self, column: "state")
        guard let kind = ItemKind(rawValue: kindText), let state = PurchaseState(rawValue: stateText) else {
            throw PostgresError(code: .decoding, message: "purchases row has kind \(kindText) and state \(stateText)")
        }
        let priceMilli = try row.decode(Int64?.self, column: "price_milli")
        let currency = try row.decode(String?.self, column: "currency")
        self.init(
            uid: try row.decode(String.self, column: "uid"),
            store: VerifiedTransaction.Store(rawValue: try row.decode(String.self, column: "store")),
            environment: StoreEnvironment(rawValue: try row.decode(String.self, column: "environment")),
            transactionId: try row.decode(String.self, column: "transaction_id"),
            originalTransactionId: try row.decode(String.self, column: "original_transaction_id"),
            productId: try row.decode(String.self, column: "product_id"),
            item: ItemID(kind: kind, index: try row.decode(Int.self, column: "item_index")),
            book: try row.decode(String.self, column: "book"),
            purchaseDate: try row.decode(Date.self, column: "purchased_at"),
            price: priceMilli.flatMap { amount in currency.map { Money(amountMilli: amount, currency: $0) } },
            storefront: try row.decode(String?.self, column: "storefront"),
            ownershipType: OwnershipType(rawValue: try row.decode(String.self, column: "ownership")),
            appAccountToken: try row.decode(UUID?.self, column: "app_account_token"),
            signedDate: try row.decode(Date.self, column: "signed_at"),
            evidenceSHA256Hex: try row.decode(String.self, column: "evidence_hex"),
            recordedAt: try row.decode(Date.self, column: "recorded_at"),
            state: state)
    }
}
