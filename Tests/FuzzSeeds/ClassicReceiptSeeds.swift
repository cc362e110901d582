import Foundation
import TestSupport

/// Classic receipts (DER/BER PKCS#7 bytes) signed by the fuzz receipt PKI, in the shapes the App Store
/// writes and a few it does not.
struct ClassicReceiptSeeds {
    let pki: TestReceiptPKI

    static let created = "2030-06-06T12:00:00Z"

    static func purchase(
        _ productId: String, _ transactionId: String, cancelled: String = "", expires: String? = nil
    ) -> TestReceipt.Purchase {
        TestReceipt.Purchase(
            productId: productId, transactionId: transactionId, purchaseDate: "2030-06-05T12:00:00Z",
            originalPurchaseDate: "2030-01-01T00:00:00Z", cancellationDate: cancelled,
            subscriptionExpirationDate: expires)
    }

    static func receipt(
        _ purchases: [TestReceipt.Purchase], type: String = "Production", bundleId: String = SeedDates.bundleId
    ) -> TestReceipt {
        TestReceipt(receiptType: type, bundleId: bundleId, creationDate: created, purchases: purchases)
    }

    func seeds() -> [String: [UInt8]] {
        let one = Self.receipt([Self.purchase(SeedDates.face, "2000000900000001")])
        let three = Self.receipt([
            Self.purchase(SeedDates.face, "2000000900000001"),
            Self.purchase(SeedDates.background, "2000000900000002", cancelled: "2030-06-06T08:00:00Z"),
            Self.purchase("com.memolease.sesac1.monthly", "2000000900000003", expires: "2030-07-05T12:00:00Z"),
        ])
        let valid = pki.sign(one.payload())
        return [
            "valid-ber-one-purchase": valid,
            "valid-der-one-purchase": pki.sign(one.payload(), container: .der),
            "valid-ber-three-purchases": pki.sign(three.payload()),
            "valid-der-signed-attributes": pki.sign(three.payload(), container: .der, signedAttributes: true),
            "valid-ber-signed-attributes": pki.sign(one.payload(), signedAttributes: true),
            "valid-ber-no-purchase": pki.sign(Self.receipt([]).payload()),
            "valid-sandbox": pki.sign(
                Self.receipt([Self.purchase(SeedDates.face, "1")], type: "ProductionSandbox").payload()),
            "valid-without-root": pki.sign(one.payload(), includeRoot: false),
            "valid-sha256-with-rsa": pki.sign(one.payload(), signatureAlgorithmOID: [1, 2, 840, 113_549, 1, 1, 11]),
            "refused-wrong-bundle": pki.sign(Self.receipt([], bundleId: "com.example.other").payload()),
            "refused-xcode": pki.sign(Self.receipt([], type: "Xcode").payload()),
            "refused-sha1": pki.sign(one.payload(), digest: .sha1),
            "refused-truncated": Array(valid.prefix(valid.count / 2)),
        ]
    }
}
