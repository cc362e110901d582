import Crypto
import Foundation
import Receipts
import SwiftASN1
import X509

/// Proofs an attacker would send, built to strike the verifiers where they were weak: claimed dates a
/// library traps on, and certificate sets whose chain paths multiply.
public enum HostileProofs {
    /// A classic receipt signed by a self-made P-256 leaf (with Apple's receipt-signing OID) whose issuer
    /// sits under `layers` levels of look-alikes: two certificates of the same subject and key at each
    /// level (serial numbers differ), each signed by the level above, the top level naming `topIssuer` (a
    /// configured root's name) but signed by a key of its own. Every signature holds but the top one, so
    /// a chain builder that tries every candidate issuer tries 2^layers paths.
    /// Returns the base64 receipt; with 64 layers it is about 46 KB.
    public static func lookAlikeChainReceipt(
        layers: Int, payload: [UInt8], topIssuer: DistinguishedName, container: TestReceiptPKI.Container = .der
    ) throws -> String {
        let now = Date()
        func name(_ text: String) throws -> DistinguishedName { try DistinguishedName { CommonName(text) } }
        var issuerName = topIssuer
        var issuerKey = P256.Signing.PrivateKey()
        var certificates: [Certificate] = []
        for layer in 1...max(1, layers) {
            let subject = try name("L\(layer)")
            let key = P256.Signing.PrivateKey()
            for _ in 0..<2 {
                certificates.append(
                    try Certificate(
                        version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey),
                        notValidBefore: now.addingTimeInterval(-TestPKI.year),
                        notValidAfter: now.addingTimeInterval(TestPKI.year), issuer: issuerName, subject: subject,
                        signatureAlgorithm: .ecdsaWithSHA256,
                        extensions: try Certificate.Extensions {
                            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                            Critical(KeyUsage(keyCertSign: true))
                            Certificate.Extension(oid: TestPKI.intermediateOID, critical: false, value: [0x05, 0x00])
                        },
                        issuerPrivateKey: .init(issuerKey)))
            }
            issuerName = subject
            issuerKey = key
        }
        let leafKey = P256.Signing.PrivateKey()
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey),
            notValidBefore: now.addingTimeInterval(-TestPKI.year), notValidAfter: now.addingTimeInterval(TestPKI.year),
            issuer: issuerName, subject: try name("Receipt Signing"), signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                Certificate.Extension(oid: TestPKI.leafOID, critical: false, value: [0x05, 0x00])
            },
            issuerPrivateKey: .init(issuerKey))
        let signature = try leafKey.signature(for: payload).derRepresentation
        let bytes = TestReceiptPKI.signedData(
            payload, certificates: [leaf] + certificates.reversed(), signer: leaf,
            digestOID: [2, 16, 840, 1, 101, 3, 4, 2, 1], signatureAlgorithmOID: [1, 2, 840, 10045, 4, 3, 2],
            signature: Array(signature), container: container)
        return Data(bytes).base64EncodedString()
    }

    /// ``lookAlikeChainReceipt(layers:payload:topIssuer:container:)`` under `root`'s name (a server's
    /// configured receipt root, Apple Inc. Root by default), for a purchase of `product`.
    public static func lookAlikeChainReceipt(layers: Int, product: String, under root: RootCertificate) throws -> String
    {
        let payload = TestReceipt(purchases: [.init(productId: product, transactionId: "look-alike-\(layers)")])
            .payload()
        let topIssuer = try Certificate(derEncoded: root.derBytes).subject
        return try lookAlikeChainReceipt(layers: layers, payload: payload, topIssuer: topIssuer)
    }

    /// The App Store notification of the crash: three self-made certificates in `x5c` (a fresh
    /// ``TestPKI``), signed by their leaf, whose payload claims `signedDate` (milliseconds since 1970;
    /// 1e17 is the year 3,170,843).
    public static func notification(
        signedDateMilliseconds: Double, bundleId: String = "com.memolease.sesac1"
    )
        throws -> String
    {
        try TestPKI().sign([
            "notificationType": "REFUND", "notificationUUID": UUID().uuidString.lowercased(), "version": "2.0",
            "signedDate": signedDateMilliseconds,
            "data": ["environment": "Production", "bundleId": bundleId, "appAppleId": 1],
        ])
    }
}
