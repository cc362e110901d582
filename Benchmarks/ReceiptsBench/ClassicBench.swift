import Crypto
import Foundation
import Receipts
import SwiftASN1
import X509
import _CryptoExtras

/// Classic app receipts verified per second: an Apple-shaped RSA-2048 chain (root → WWDR-like
/// intermediate → receipt-signing leaf), Apple's BER layout (indefinite lengths, constructed content
/// OCTET STRING, bare `rsaEncryption`, no signed attributes), one and twenty in-app purchases.
enum ClassicBench {
    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var length: [UInt8] = []
        var count = content.count
        if count < 0x80 {
            length = [UInt8(count)]
        } else {
            while count > 0 {
                length.insert(UInt8(count & 0xFF), at: 0)
                count >>= 8
            }
            length.insert(0x80 | UInt8(length.count), at: 0)
        }
        return [tag] + length + content
    }
    static func indefinite(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { [tag, 0x80] + content + [0, 0] }
    static func integer(_ value: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var rest = value
        repeat {
            bytes.insert(UInt8(rest & 0xFF), at: 0)
            rest >>= 8
        } while rest > 0
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return tlv(0x02, bytes)
    }
    static func attribute(_ type: Int, _ value: [UInt8]) -> [UInt8] {
        tlv(0x30, integer(type) + integer(1) + tlv(0x04, value))
    }
    static func utf8(_ text: String) -> [UInt8] { tlv(0x0C, Array(text.utf8)) }
    static func ia5(_ text: String) -> [UInt8] { tlv(0x16, Array(text.utf8)) }
    static func der(_ certificate: Certificate) -> [UInt8] {
        var serializer = DER.Serializer()
        try! serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    static func payload(purchases: Int) -> [UInt8] {
        var attributes = [
            attribute(0, utf8("Production")), attribute(2, utf8("com.memolease.sesac1")), attribute(3, utf8("42")),
            attribute(12, ia5("2026-11-20T10:00:00Z")), attribute(4, Array(repeating: 7, count: 16)),
        ]
        for index in 0..<purchases {
            let entry = [
                attribute(1701, integer(1)), attribute(1702, utf8("com.memolease.sesac1.sprout\(index % 8)")),
                attribute(1703, utf8("\(2_000_000_900_000_000 + index)")),
                attribute(1705, utf8("\(2_000_000_900_000_000 + index)")),
                attribute(1704, ia5("2026-11-01T09:30:00Z")), attribute(1706, ia5("2026-11-01T09:30:00Z")),
                attribute(1712, ia5("")),
            ]
            attributes.append(attribute(17, tlv(0x31, entry.flatMap { $0 })))
        }
        return tlv(0x31, attributes.flatMap { $0 })
    }

    static func run(iterations: Int) async throws {
        let now = Date()
        let year: TimeInterval = 365 * 86400
        let rootKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let intermediateKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let leafKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let rootName = try DistinguishedName { CommonName("Bench Receipt Root") }
        let intermediateName = try DistinguishedName { CommonName("Bench WWDR") }
        let leafName = try DistinguishedName { CommonName("Bench Receipt Signing") }
        let root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey), notValidBefore: now - 10 * year,
            notValidAfter: now + 10 * year, issuer: rootName, subject: rootName,
            signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try .init {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            }, issuerPrivateKey: .init(rootKey))
        let intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey),
            notValidBefore: now - 5 * year,
            notValidAfter: now + 5 * year, issuer: rootName, subject: intermediateName,
            signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try .init {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                Certificate.Extension(oid: [1, 2, 840, 113635, 100, 6, 2, 1], critical: false, value: [0x05, 0x00])
            }, issuerPrivateKey: .init(rootKey))
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey), notValidBefore: now - year,
            notValidAfter: now + year, issuer: intermediateName, subject: leafName,
            signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try .init {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                Certificate.Extension(oid: [1, 2, 840, 113635, 100, 6, 11, 1], critical: false, value: [0x05, 0x00])
            }, issuerPrivateKey: .init(intermediateKey))

        func receipt(purchases: Int) throws -> String {
            let content = payload(purchases: purchases)
            let signature = try leafKey.signature(for: SHA256.hash(data: content), padding: .insecurePKCS1v1_5)
            var issuer = DER.Serializer()
            try issuer.serialize(leaf.issuer)
            let sha256 = tlv(0x30, tlv(0x06, [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01]) + [0x05, 0x00])
            let rsaEncryption = tlv(
                0x30, tlv(0x06, [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]) + [0x05, 0x00])
            let signerInfo = tlv(
                0x30,
                integer(1) + tlv(0x30, issuer.serializedBytes + tlv(0x02, Array(leaf.serialNumber.bytes))) + sha256
                    + rsaEncryption + tlv(0x04, Array(signature.rawRepresentation)))
            let dataOID = tlv(0x06, [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01])
            let signedDataOID = tlv(0x06, [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02])
            let encapsulated = indefinite(0x30, dataOID + indefinite(0xA0, indefinite(0x24, tlv(0x04, content))))
            let certificates = tlv(0xA0, der(leaf) + der(intermediate) + der(root))
            let signedData = indefinite(
                0x30, integer(1) + tlv(0x31, sha256) + encapsulated + certificates + tlv(0x31, signerInfo))
            return Data(indefinite(0x30, signedDataOID + indefinite(0xA0, signedData))).base64EncodedString()
        }

        var configuration = VerifierConfiguration(bundleId: "com.memolease.sesac1")
        configuration.receiptRootCertificates = [try RootCertificate(derEncoded: der(root))]
        let verifier = try ReceiptVerifier(configuration: configuration)
        print("classic app receipts: RSA-2048 root, WWDR-like intermediate and leaf; BER indefinite layout")
        for purchases in [1, 20] {
            let input = try receipt(purchases: purchases)
            for _ in 0..<20 { _ = try await verifier.verifyAppReceipt(input) }  // warm-up, and proof it verifies
            let clock = ContinuousClock()
            var failures = 0
            let count = max(iterations / 5, 1)
            let elapsed = await clock.measure {
                for _ in 0..<count {
                    do { _ = try await verifier.prove(receipt: input, productId: "com.memolease.sesac1.sprout0") } catch
                    {
                        failures += 1
                    }
                }
            }
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let rate = Double(count) / seconds
            print(
                "  \(purchases) purchase(s), \(input.utf8.count) bytes base64: \(count) verifications in "
                    + "\(String(format: "%.3f", seconds)) s = \(Int(rate)) /s (\(String(format: "%.0f", 1e6 / rate)) µs each), "
                    + "failures \(failures)")
        }
        let message = Array("bench".utf8)
        let signature = try leafKey.signature(for: SHA256.hash(data: message), padding: .insecurePKCS1v1_5)
        let publicKey = leafKey.publicKey
        let clock = ContinuousClock()
        var ok = 0
        let elapsed = clock.measure {
            for _ in 0..<iterations
            where publicKey.isValidSignature(signature, for: SHA256.hash(data: message), padding: .insecurePKCS1v1_5) {
                ok += 1
            }
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("  bare RSA-2048 PKCS#1 v1.5 verify: \(Int(Double(iterations) / seconds)) /s (ok \(ok))")
    }
}
