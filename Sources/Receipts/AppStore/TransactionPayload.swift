import Foundation

/// The JSON payload of an App Store signed transaction (Apple's `JWSTransactionDecodedPayload`), as sent.
/// Every field is optional on the wire; ``AppStoreVerifier`` decides which are required.
struct TransactionPayload: Decodable {
    var transactionId: String?
    var originalTransactionId: String?
    var bundleId: String?
    var productId: String?
    var type: String?
    var purchaseDate: Date?
    var originalPurchaseDate: Date?
    var signedDate: Date?
    var environment: String?
    var price: Int64?
    var currency: String?
    var storefront: String?
    var inAppOwnershipType: String?
    var appAccountToken: String?
    var revocationDate: Date?
    var revocationReason: Int32?
    var revocationType: String?
    var revocationPercentage: Int32?
}
