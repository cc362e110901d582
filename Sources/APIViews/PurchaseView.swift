import Foundation
import Ledger
import Receipts

/// A recorded purchase as the API answers it (`POST /api/v1/purchases`, restores, the admin lookups) and
/// the support commands' `--json` print it. Money is integer milliunits with its currency; `price` and
/// `storefront` are null when the store did not say.
public struct PurchaseView: Encodable, Sendable, Equatable {
    public struct Item: Encodable, Sendable, Equatable {
        public let kind: String
        public let index: Int

        public init(_ item: ItemID) {
            kind = item.kind.rawValue
            index = item.index
        }
    }

    public let transactionId: String
    public let originalTransactionId: String
    public let store: String
    public let environment: String
    public let productId: String
    public let item: Item
    public let purchaseDate: String
    @NullWhenNil public var price: Money?
    @NullWhenNil public var storefront: String?
    public let ownershipType: String
    public let state: String
    public let recordedAt: String

    public init(_ purchase: Purchase) {
        transactionId = purchase.transactionId
        originalTransactionId = purchase.originalTransactionId
        store = purchase.store.rawValue
        environment = purchase.environment.rawValue
        productId = purchase.productId
        item = Item(purchase.item)
        purchaseDate = ViewJSON.timestamp(purchase.purchaseDate)
        price = purchase.price
        storefront = purchase.storefront
        ownershipType = purchase.ownershipType.rawValue
        state = purchase.state.rawValue
        recordedAt = ViewJSON.timestamp(purchase.recordedAt)
    }
}
