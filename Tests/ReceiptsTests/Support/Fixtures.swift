import Foundation
import Receipts
import TestSupport

/// Payloads and configurations shared by the tests.
enum Fixtures {
    static let bundleId = "com.memolease.sesac1"
    static let productId = "com.memolease.sesac1.sprout1"
    static let purchaseMs: Int64 = 1_763_000_000_000
    static let originalPurchaseMs: Int64 = 1_762_000_000_000
    static let appAccountToken = "7e3fb20b-4cdb-47cc-936d-99d65f608138"

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }

    /// A Non-Consumable production purchase, every field Apple sends for one.
    static func transaction(
        _ overrides: [String: Any] = [:], removing: [String] = [], signedAt: Date = Date()
    ) -> [String: Any] {
        var payload: [String: Any] = [
            "transactionId": "2000000812345678",
            "originalTransactionId": "2000000812345670",
            "bundleId": bundleId,
            "productId": productId,
            "type": "Non-Consumable",
            "purchaseDate": purchaseMs,
            "originalPurchaseDate": originalPurchaseMs,
            "signedDate": milliseconds(signedAt),
            "environment": "Production",
            "price": 1_200_000,
            "currency": "KRW",
            "storefront": "KOR",
            "storefrontId": "143466",
            "inAppOwnershipType": "PURCHASED",
            "appAccountToken": appAccountToken,
            "quantity": 1,
            "transactionReason": "PURCHASE",
            "appTransactionId": "704289524436823251",
        ]
        for (key, value) in overrides { payload[key] = value }
        for key in removing { payload[key] = nil }
        return payload
    }

    static func notification(
        type: String, subtype: String? = nil, signedTransaction: String?, environment: String = "Production",
        bundleId: String = bundleId, uuid: String = "002e14d5-51f5-4503-b5a8-c3a1af68eb20", signedAt: Date = Date()
    ) -> [String: Any] {
        var data: [String: Any] = [
            "environment": environment, "appAppleId": 41_234, "bundleId": bundleId, "bundleVersion": "1.2",
        ]
        if let signedTransaction { data["signedTransactionInfo"] = signedTransaction }
        if type == "CONSUMPTION_REQUEST" { data["consumptionRequestReason"] = "UNINTENDED_PURCHASE" }
        var payload: [String: Any] = [
            "notificationType": type, "notificationUUID": uuid, "version": "2.0",
            "signedDate": milliseconds(signedAt), "data": data,
        ]
        if let subtype { payload["subtype"] = subtype }
        return payload
    }

    static func configuration(
        _ pki: TestPKI, environments: Set<StoreEnvironment> = [.production, .sandbox],
        productTypes: Set<ProductType> = [.nonConsumable], cacheCapacity: Int = 32
    ) -> VerifierConfiguration {
        VerifierConfiguration(
            bundleId: bundleId, acceptedEnvironments: environments, acceptedProductTypes: productTypes,
            rootCertificates: [pki.rootCertificate], chainCacheCapacity: cacheCapacity)
    }

    static func verifier(_ pki: TestPKI, cacheCapacity: Int = 32) throws -> ReceiptVerifier {
        try ReceiptVerifier(configuration: configuration(pki, cacheCapacity: cacheCapacity))
    }
}

/// The refusal of an async verification, or nil when it succeeded. Any other error is turned into a
/// refusal with reason `unexpected_error`, which no test expects.
func refusal(_ body: () async throws -> Void) async -> ReceiptRefusal? {
    do {
        try await body()
        return nil
    } catch let refusal as ReceiptRefusal {
        return refusal
    } catch {
        return ReceiptRefusal(.init(rawValue: "unexpected_error"), "\(error)")
    }
}

/// The refusal reason of an async verification, or nil when it succeeded.
func refusalReason(_ body: () async throws -> Void) async -> ReceiptRefusal.Reason? {
    await refusal(body)?.reason
}

/// Classic receipts signed by a ``TestReceiptPKI``.
enum ClassicFixtures {
    static let face3 = "com.memolease.sesac1.sprout3"
    static let background2 = "com.memolease.sesac1.background2"

    static func configuration(
        _ pki: TestReceiptPKI = .shared, environments: Set<StoreEnvironment> = [.production, .sandbox]
    ) -> VerifierConfiguration {
        VerifierConfiguration(
            bundleId: Fixtures.bundleId, acceptedEnvironments: environments,
            receiptRootCertificates: [pki.rootCertificate])
    }

    static func verifier(
        _ pki: TestReceiptPKI = .shared, environments: Set<StoreEnvironment> = [.production, .sandbox]
    ) throws -> ReceiptVerifier {
        try ReceiptVerifier(configuration: configuration(pki, environments: environments))
    }

    static func purchase(
        _ productId: String = face3, _ transactionId: String = "2000000900000001"
    ) -> TestReceipt.Purchase {
        TestReceipt.Purchase(productId: productId, transactionId: transactionId)
    }

    static func receipt(_ purchases: [TestReceipt.Purchase] = [purchase()], type: String = "Production") -> TestReceipt
    {
        TestReceipt(receiptType: type, purchases: purchases)
    }
}
