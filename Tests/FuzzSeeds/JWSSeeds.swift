import Crypto
import Foundation
import FuzzTargets
import TestSupport

/// Signed transactions and notifications signed by the fuzz App Store PKI, as ``JWSInput`` files.
struct JWSSeeds {
    let pki: TestPKI

    func transaction(_ overrides: [String: Any] = [:], removing: [String] = []) -> [String: Any] {
        var payload: [String: Any] = [
            "transactionId": "2000000812345678",
            "originalTransactionId": "2000000812345670",
            "bundleId": SeedDates.bundleId,
            "productId": SeedDates.face,
            "type": "Non-Consumable",
            "purchaseDate": SeedDates.purchaseMs,
            "originalPurchaseDate": SeedDates.originalPurchaseMs,
            "signedDate": SeedDates.signedMs,
            "environment": "Production",
            "price": 1_200_000,
            "currency": "KRW",
            "storefront": "KOR",
            "storefrontId": "143466",
            "inAppOwnershipType": "PURCHASED",
            "appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138",
            "quantity": 1,
            "transactionReason": "PURCHASE",
        ]
        for (key, value) in overrides { payload[key] = value }
        for key in removing { payload[key] = nil }
        return payload
    }

    func notification(
        _ type: String, subtype: String? = nil, transaction: String?, environment: String = "Production",
        body: String = "data"
    ) -> [String: Any] {
        var data: [String: Any] = [
            "environment": environment, "appAppleId": 41_234, "bundleId": SeedDates.bundleId, "bundleVersion": "1.2",
        ]
        if let transaction { data["signedTransactionInfo"] = transaction }
        if type == "CONSUMPTION_REQUEST" { data["consumptionRequestReason"] = "UNINTENDED_PURCHASE" }
        var payload: [String: Any] = [
            "notificationType": type, "notificationUUID": "002e14d5-51f5-4503-b5a8-c3a1af68eb20", "version": "2.0",
            "signedDate": SeedDates.signedMs, body: data,
        ]
        if let subtype { payload["subtype"] = subtype }
        return payload
    }

    /// The ``JWSInput`` file of a compact JWS.
    static func file(_ compact: String) -> [UInt8] {
        guard let file = JWSInput.file(compact: compact) else { fatalError("not an unpadded compact JWS: \(compact)") }
        return file
    }

    func transactionSeeds() -> [String: [UInt8]] {
        let valid = pki.sign(transaction())
        return [
            "valid-production": Self.file(valid),
            "valid-compact-text": Array(valid.utf8),
            "valid-sandbox-minimal": Self.file(
                pki.sign(
                    transaction(
                        ["environment": "Sandbox"],
                        removing: [
                            "originalTransactionId", "originalPurchaseDate", "price", "currency", "storefront",
                            "storefrontId", "appAccountToken", "quantity", "transactionReason",
                        ]))),
            "valid-family-shared": Self.file(pki.sign(transaction(["inAppOwnershipType": "FAMILY_SHARED"]))),
            "valid-revoked": Self.file(
                pki.sign(
                    transaction([
                        "revocationDate": SeedDates.signedMs, "revocationReason": 0,
                        "revocationType": "REFUND_PRORATED",
                        "revocationPercentage": 50_000,
                    ]))),
            "refused-consumable": Self.file(pki.sign(transaction(["type": "Consumable"]))),
            "refused-wrong-bundle": Self.file(pki.sign(transaction(["bundleId": "com.example.other"]))),
            "refused-xcode": Self.file(pki.sign(transaction(["environment": "Xcode"]))),
            "refused-other-key": Self.file(pki.sign(transaction(), signingKey: P256.Signing.PrivateKey())),
            "refused-alg-hs256": Self.file(pki.sign(transaction(), header: ["alg": "HS256", "x5c": pki.x5c])),
            "refused-no-x5c": Self.file(pki.sign(transaction(), header: ["alg": "ES256"])),
        ]
    }

    func notificationSeeds() -> [String: [UInt8]] {
        let bought = pki.sign(transaction())
        let refunded = pki.sign(
            transaction(["revocationDate": SeedDates.signedMs, "revocationReason": 1, "revocationType": "REFUND_FULL"]))
        let sandbox = pki.sign(transaction(["environment": "Sandbox"]))
        return [
            "valid-refund": Self.file(pki.sign(notification("REFUND", transaction: refunded))),
            "valid-refund-declined": Self.file(pki.sign(notification("REFUND_DECLINED", transaction: bought))),
            "valid-consumption-request": Self.file(pki.sign(notification("CONSUMPTION_REQUEST", transaction: bought))),
            "valid-test": Self.file(pki.sign(notification("TEST", transaction: nil))),
            "valid-summary": Self.file(
                pki.sign(notification("RENEWAL_EXTENSION", subtype: "SUMMARY", transaction: nil, body: "summary"))),
            "valid-sandbox": Self.file(pki.sign(notification("REFUND", transaction: sandbox, environment: "Sandbox"))),
            "refused-environment-mismatch": Self.file(pki.sign(notification("REFUND", transaction: sandbox))),
            "refused-other-key": Self.file(
                pki.sign(notification("REFUND", transaction: refunded), signingKey: P256.Signing.PrivateKey())),
        ]
    }
}
