import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// An RSA-2048 key and a self-signed certificate for it: stands in for one of Google's securetoken keys.
struct GoogleTestKey {
    static let keyID = "fuzz-key-1"

    let privateKey: _RSA.Signing.PrivateKey
    let certificatePEM: String

    init(notValidBefore: Date, notValidAfter: Date) throws {
        privateKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let key = Certificate.PrivateKey(privateKey)
        let name = try DistinguishedName { CommonName("ShopLedger Fuzz securetoken") }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey,
            notValidBefore: notValidBefore, notValidAfter: notValidAfter, issuer: name, subject: name,
            signatureAlgorithm: .sha256WithRSAEncryption, extensions: Certificate.Extensions(), issuerPrivateKey: key)
        certificatePEM = try certificate.serializeAsPEM().pemString
    }

    /// Google's securetoken x509 file: `{"<kid>": "<PEM>"}`.
    var certificateJSON: Data {
        try! JSONSerialization.data(
            withJSONObject: [Self.keyID: certificatePEM],
            options: [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted])
    }
}
