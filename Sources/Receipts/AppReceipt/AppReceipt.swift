import Foundation

/// The content of a classic App Store receipt (the file at `appStoreReceiptURL`), as signed by Apple:
/// the fields ShopLedger reads, each in-app purchase entry included. Built only by ``AppReceiptVerifier``
/// from a receipt whose signature and chain it verified, or by ``parsePayload(_:)`` for tests and tools.
public struct AppReceipt: Sendable, Hashable {
    /// One in-app purchase entry (receipt field 17).
    public struct Purchase: Sendable, Hashable {
        /// Field 1701; 1 for non-consumables.
        public var quantity: Int
        /// Field 1702.
        public var productId: String
        /// Field 1703.
        public var transactionId: String
        /// Field 1705; the transaction id when absent.
        public var originalTransactionId: String
        /// Field 1704.
        public var purchaseDate: Date
        /// Field 1706; the purchase date when absent or empty.
        public var originalPurchaseDate: Date
        /// Field 1708, set for auto-renewable subscriptions only.
        public var subscriptionExpirationDate: Date?
        /// Field 1712: set when Apple refunded (cancelled) the purchase.
        public var cancellationDate: Date?
    }

    /// Field 0, as Apple spells it: `Production`, `ProductionSandbox`, `Sandbox` or `Xcode`.
    public var receiptType: String
    /// Field 2.
    public var bundleId: String
    /// Field 3 (`CFBundleVersion` of the app that received the receipt); empty when absent.
    public var appVersion: String
    /// Field 12: when the App Store (or Xcode) created the receipt. Chains are validated at this time.
    public var creationDate: Date
    /// Field 17, in receipt order. May be empty: a receipt need not hold any purchase.
    public var purchases: [Purchase]

    /// The environment the receipt comes from, in the spelling signed transactions use: `ProductionSandbox`
    /// and `Sandbox` are ``StoreEnvironment/sandbox``; an unknown type keeps its own name (and is then
    /// refused by configuration, not by parsing).
    public var environment: StoreEnvironment {
        switch receiptType {
        case "Production": .production
        case "ProductionSandbox", "Sandbox": .sandbox
        case "Xcode": .xcode
        default: StoreEnvironment(rawValue: receiptType)
        }
    }
}

extension AppReceipt {
    /// What the base64 receipt `input` says, read WITHOUT verifying its signature or chain: for support
    /// tools that show what a refused receipt claims. Nil when it does not parse.
    public init?(unverifiedBase64 input: String) {
        guard let receipt = AppReceiptVerifier.unverifiedReceipt(input) else { return nil }
        self = receipt
    }
}
