import Crypto
import Foundation
import Receipts
import SwiftASN1
import X509

// JWS verifications per second on one core, with and without the verified-chain cache, for an
// all-P-256 chain and an Apple-shaped one (P-384 root and intermediate, P-256 leaf); then classic app
// receipts (RSA-2048 chain, Apple's BER layout), see ClassicBench.swift.
// Usage: ReceiptsBench [iterations]           (pin it to one core: taskset -c 0)
//        ReceiptsBench --emit DIR             (writes a test root and signed JWS files for trying the CLI)

struct BenchPKI {
    let root: Certificate
    let intermediate: Certificate
    let leaf: Certificate
    let leafKey: P256.Signing.PrivateKey

    /// appleLike: P-384 root and intermediate (like Apple Root CA - G3 / WWDR G6), P-256 leaf.
    init(appleLike: Bool) throws {
        let now = Date()
        let year: TimeInterval = 365 * 86400
        let rootName = try DistinguishedName { CommonName("Bench Root") }
        let intermediateName = try DistinguishedName { CommonName("Bench Intermediate") }
        let leafName = try DistinguishedName { CommonName("Bench Leaf") }
        let leafKey = P256.Signing.PrivateKey()
        let rootPriv: Certificate.PrivateKey
        let rootPub: Certificate.PublicKey
        let intPriv: Certificate.PrivateKey
        let intPub: Certificate.PublicKey
        if appleLike {
            let r = P384.Signing.PrivateKey(), i = P384.Signing.PrivateKey()
            (rootPriv, rootPub, intPriv, intPub) = (.init(r), .init(r.publicKey), .init(i), .init(i.publicKey))
        } else {
            let r = P256.Signing.PrivateKey(), i = P256.Signing.PrivateKey()
            (rootPriv, rootPub, intPriv, intPub) = (.init(r), .init(r.publicKey), .init(i), .init(i.publicKey))
        }
        root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: rootPub,
            notValidBefore: now - 10 * year, notValidAfter: now + 10 * year, issuer: rootName, subject: rootName,
            extensions: try .init {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            }, issuerPrivateKey: rootPriv)
        intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: intPub,
            notValidBefore: now - 5 * year, notValidAfter: now + 5 * year, issuer: rootName, subject: intermediateName,
            extensions: try .init {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                Certificate.Extension(oid: [1, 2, 840, 113635, 100, 6, 2, 1], critical: false, value: [0x05, 0x00])
            }, issuerPrivateKey: rootPriv)
        leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey),
            notValidBefore: now - year, notValidAfter: now + year, issuer: intermediateName, subject: leafName,
            extensions: try .init {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                Certificate.Extension(oid: [1, 2, 840, 113635, 100, 6, 11, 1], critical: false, value: [0x05, 0x00])
            }, issuerPrivateKey: intPriv)
        self.leafKey = leafKey
    }

    static func der(_ c: Certificate) -> [UInt8] {
        var s = DER.Serializer()
        try! s.serialize(c)
        return s.serializedBytes
    }

    static func b64url(_ d: some DataProtocol) -> String {
        Data(d).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    func sign(_ payload: [String: Any]) -> String {
        let header: [String: Any] = [
            "alg": "ES256", "x5c": [leaf, intermediate, root].map { Data(Self.der($0)).base64EncodedString() },
        ]
        let input =
            Self.b64url(try! JSONSerialization.data(withJSONObject: header)) + "."
            + Self.b64url(try! JSONSerialization.data(withJSONObject: payload))
        return input + "." + Self.b64url(try! leafKey.signature(for: Data(input.utf8)).rawRepresentation)
    }
}

func transaction(_ id: Int, environment: String = "Production") -> [String: Any] {
    let ms = Int64(Date().timeIntervalSince1970 * 1000)
    return [
        "transactionId": "\(2_000_000_000_000_000 + id)", "originalTransactionId": "\(2_000_000_000_000_000 + id)",
        "bundleId": "com.memolease.sesac1", "productId": "com.memolease.sesac1.sprout1", "type": "Non-Consumable",
        "purchaseDate": ms - 1000, "originalPurchaseDate": ms - 1000, "signedDate": ms, "environment": environment,
        "price": 1_200_000, "currency": "KRW", "storefront": "KOR", "inAppOwnershipType": "PURCHASED",
        "appAccountToken": UUID().uuidString,
    ]
}

func measure(_ label: String, verifier: ReceiptVerifier, inputs: [String], iterations: Int) async -> Double {
    for input in inputs.prefix(50) { _ = try? await verifier.verifyTransaction(input) }  // warm-up
    let clock = ContinuousClock()
    var failures = 0
    let elapsed = await clock.measure {
        for index in 0..<iterations {
            do { _ = try await verifier.verifyTransaction(inputs[index % inputs.count]) } catch { failures += 1 }
        }
    }
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let rate = Double(iterations) / seconds
    print(
        "\(label): \(iterations) verifications in \(String(format: "%.3f", seconds)) s = \(Int(rate)) /s (\(String(format: "%.1f", 1e6 / rate)) µs each), failures \(failures)"
    )
    return rate
}

@main
struct Bench {
    static func main() async throws {
        let arguments = CommandLine.arguments
        let iterations = arguments.count > 1 ? Int(arguments[1]) ?? 5_000 : 5_000
        if let emitIndex = arguments.firstIndex(of: "--emit"), emitIndex + 1 < arguments.count {
            try emit(to: arguments[emitIndex + 1])
            return
        }
        for appleLike in [false, true] {
            let pki = try BenchPKI(appleLike: appleLike)
            let root = try RootCertificate(derEncoded: BenchPKI.der(pki.root))
            let inputs = (0..<200).map { pki.sign(transaction($0)) }
            let name = appleLike ? "P-384 root+intermediate, P-256 leaf (Apple-like)" : "all P-256"
            print("chain: \(name); JWS size \(inputs[0].utf8.count) bytes")
            for capacity in [32, 0] {
                let verifier = try ReceiptVerifier(
                    configuration: .init(
                        bundleId: "com.memolease.sesac1", rootCertificates: [root], chainCacheCapacity: capacity))
                _ = await measure(
                    capacity > 0 ? "  cached chain  " : "  no cache      ", verifier: verifier, inputs: inputs,
                    iterations: capacity > 0 ? iterations : iterations / 5)
            }
            // Reference: the bare ES256 check alone.
            let key = pki.leafKey.publicKey
            let message = Data(inputs[0].utf8.prefix(while: { _ in true }))
            let signature = try pki.leafKey.signature(for: message)
            let clock = ContinuousClock()
            let n = iterations
            var ok = 0
            let elapsed = clock.measure {
                for _ in 0..<n where key.isValidSignature(signature, for: message) { ok += 1 }
            }
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            print("  bare P-256 ECDSA verify: \(Int(Double(n) / seconds)) /s (ok \(ok))")
        }
        try await ClassicBench.run(iterations: iterations)
    }

    static func emit(to directory: String) throws {
        let pki = try BenchPKI(appleLike: true)
        let url = URL(fileURLWithPath: directory)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let pem =
            "-----BEGIN CERTIFICATE-----\n"
            + Data(BenchPKI.der(pki.root)).base64EncodedString(options: .lineLength64Characters)
            + "\n-----END CERTIFICATE-----\n"
        try Data(pem.utf8).write(to: url.appendingPathComponent("root.pem"))
        try Data(BenchPKI.der(pki.root)).write(to: url.appendingPathComponent("root.cer"))
        let tx = pki.sign(transaction(1))
        try Data(tx.utf8).write(to: url.appendingPathComponent("transaction.jws"))
        try Data(pki.sign(transaction(2, environment: "Sandbox")).utf8).write(
            to: url.appendingPathComponent("sandbox.jws"))
        let ms = Int64(Date().timeIntervalSince1970 * 1000)
        var refunded = transaction(1)
        refunded["revocationDate"] = ms
        refunded["revocationReason"] = 0
        refunded["revocationType"] = "REFUND_FULL"
        let notification: [String: Any] = [
            "notificationType": "REFUND", "notificationUUID": UUID().uuidString, "version": "2.0", "signedDate": ms,
            "data": [
                "environment": "Production", "bundleId": "com.memolease.sesac1", "appAppleId": 1,
                "signedTransactionInfo": pki.sign(refunded),
            ],
        ]
        try Data(pki.sign(notification).utf8).write(to: url.appendingPathComponent("notification.jws"))
        print("wrote root.pem, root.cer, transaction.jws, sandbox.jws, notification.jws to \(directory)")
    }
}
