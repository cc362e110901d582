import Crypto
import Foundation
import Receipts
import TestSupport
import Testing

@Suite("Root certificates")
struct RootCertificateTests {
    @Test("the shipped Apple Root CA - G3 parses and has Apple's published fingerprint")
    func appleRootCAG3() throws {
        let root = RootCertificate.appleRootCAG3
        #expect(root.sha256Fingerprint == "63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179")
        #expect(root.sha256Fingerprint == RootCertificate.appleRootCAG3Fingerprint)
        #expect(root.subject.contains("Apple Root CA - G3"))
        #expect(root.notValidAfter > Date())
        #expect(VerifierConfiguration(bundleId: "b").rootCertificates == [root])
    }

    @Test("the embedded Apple Inc. Root Certificate has Apple's published fingerprint and is the receipt default")
    func appleIncRoot() throws {
        let root = RootCertificate.appleIncRoot
        #expect(root.sha256Fingerprint == "B0B1730ECBC7FF4505142C49F1295E6EDA6BCAED7E2C68C5BE91B5A11001F024")
        #expect(root.sha256Fingerprint == RootCertificate.appleIncRootFingerprint)
        #expect(root.subject.contains("CN=Apple Root CA"))
        #expect(root.subject.contains("O=Apple Inc."))
        #expect(root.notValidAfter == Date(timeIntervalSince1970: 2_054_670_036))  // 2035-02-09T21:40:36Z
        #expect(VerifierConfiguration(bundleId: "b").receiptRootCertificates == [root])
        #expect(throws: ReceiptsConfigurationError.self) {
            try ReceiptVerifier(configuration: .init(bundleId: "b", receiptRootCertificates: []))
        }
    }

    @Test("roots load from PEM (one or several) and DER files; junk is a configuration error")
    func loading() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receipts-roots-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try TestPKI().rootCertificate
        let second = try TestPKI().rootCertificate
        func pem(_ root: RootCertificate) -> String {
            "-----BEGIN CERTIFICATE-----\n"
                + Data(root.derBytes).base64EncodedString(options: .lineLength64Characters)
                + "\n-----END CERTIFICATE-----\n"
        }
        let der = directory.appendingPathComponent("root.cer")
        let pemFile = directory.appendingPathComponent("roots.pem")
        let junk = directory.appendingPathComponent("junk.pem")
        try Data(first.derBytes).write(to: der)
        try Data((pem(first) + pem(second)).utf8).write(to: pemFile)
        try Data("-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n".utf8).write(to: junk)

        #expect(try RootCertificate.load(contentsOfFile: der.path) == [first])
        #expect(try RootCertificate.load(contentsOfFile: pemFile.path) == [first, second])
        #expect(throws: ReceiptsConfigurationError.self) { try RootCertificate.load(contentsOfFile: junk.path) }
        #expect(throws: ReceiptsConfigurationError.self) {
            try RootCertificate.load(contentsOfFile: directory.appendingPathComponent("missing").path)
        }
        #expect(throws: ReceiptsConfigurationError.self) { try RootCertificate(derEncoded: [0x30, 0x03, 0x02, 0x01]) }
    }

    @Test("a verifier needs a bundle id, a root and a non-empty stub secret")
    func configurationChecks() {
        #expect(throws: ReceiptsConfigurationError.self) { try ReceiptVerifier(configuration: .init(bundleId: "")) }
        #expect(throws: ReceiptsConfigurationError.self) {
            try ReceiptVerifier(configuration: .init(bundleId: "b", rootCertificates: []))
        }
        #expect(throws: ReceiptsConfigurationError.self) {
            try ReceiptVerifier(configuration: .init(bundleId: "b", stubSecret: ""))
        }
    }
}
