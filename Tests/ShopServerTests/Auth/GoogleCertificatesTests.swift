import Crypto
import Foundation
import ShopServer
import SwiftASN1
import TestSupport
import Testing
import X509

@Suite("Google certificate file: loading and reloading")
struct GoogleCertificatesTests {
    @Test func loadsEveryRSAKeyByKid() throws {
        try withAuthTestDirectory { directory in
            let path = directory.appendingPathComponent("securetoken.json").path
            try googleCertificateJSON(["kid-a": .primary, "kid-b": .other]).write(to: URL(fileURLWithPath: path))
            let certificates = try GoogleCertificates.load(contentsOfFile: path)
            #expect(certificates.keyIDs == ["kid-a", "kid-b"])
            #expect(certificates["kid-a"]?.notValidAfter == authTestNow + 14 * 86_400)
            #expect(certificates.skippedKeyIDs.isEmpty)
        }
    }

    @Test func readsGooglesExactFileShape() throws {
        // As served: a pretty-printed object whose values are PEM strings with escaped "\n" line breaks.
        let pem = TestSigningKey.primary.certificatePEM.replacingOccurrences(of: "\n", with: "\\n")
        let text = "{\n  \"0a1b2c3d\": \"\(pem)\\n\"\n}\n"
        let certificates = try GoogleCertificates(parsingJSON: Data(text.utf8))
        #expect(certificates.keyIDs == ["0a1b2c3d"])
    }

    @Test func nonRSACertificatesAreSkipped() throws {
        let json = googleCertificateJSON(["kid-rsa": .primary]).mergingJSON(["kid-ec": try p256CertificatePEM()])
        let certificates = try GoogleCertificates(parsingJSON: json)
        #expect(certificates.keyIDs == ["kid-rsa"])
        #expect(certificates.skippedKeyIDs == ["kid-ec"])
    }

    @Test func aFileWithNoUsableKeyIsAClearConfigurationError() throws {
        let empty = configurationRefusal { try GoogleCertificates(parsingJSON: Data("{}".utf8)) }
        #expect(empty?.description.contains("no certificates") == true)

        let onlyEC = configurationRefusal {
            try GoogleCertificates(parsingJSON: authJSON(["kid-ec": try! p256CertificatePEM()]))
        }
        #expect(onlyEC?.description.contains("none of the 1 certificates has an RSA key") == true)

        try withAuthTestDirectory { directory in
            let path = directory.appendingPathComponent("empty.json").path
            try Data("{}".utf8).write(to: URL(fileURLWithPath: path))
            let error = configurationRefusal { try GoogleCertificateStore(contentsOfFile: path) }
            #expect(error?.description == "Google certificate file \(path): the file holds no certificates")
        }
    }

    @Test func unreadableOrBrokenFilesAreConfigurationErrors() throws {
        let missing = configurationRefusal {
            try GoogleCertificates.load(contentsOfFile: "/nonexistent/securetoken.json")
        }
        #expect(
            missing?.description.contains("cannot read the Google certificate file /nonexistent/securetoken.json")
                == true)

        let notJSON = configurationRefusal {
            try GoogleCertificates(parsingJSON: Data("-----BEGIN CERTIFICATE-----".utf8))
        }
        #expect(notJSON?.description.contains("not a JSON object") == true)

        let array = configurationRefusal { try GoogleCertificates(parsingJSON: Data("[]".utf8)) }
        #expect(array?.description.contains("not a JSON object") == true)

        let badPEM = configurationRefusal {
            try GoogleCertificates(
                parsingJSON: googleCertificateJSON(["kid-a": .primary]).mergingJSON(["kid-bad": "junk"]))
        }
        #expect(badPEM?.description.contains("\"kid-bad\" is not a PEM X.509 certificate") == true)
    }

    @Test func reloadSwapsTheKeySet() throws {
        try withAuthTestDirectory { directory in
            let path = directory.appendingPathComponent("securetoken.json").path
            try googleCertificateJSON(["kid-primary": .primary]).write(to: URL(fileURLWithPath: path))
            let store = try GoogleCertificateStore(contentsOfFile: path)
            let verifier = try FirebaseTokenVerifier(
                projectId: authTestProjectId, certificates: store, now: { authTestNow })
            let oldToken = try TestTokens().token()
            let newToken = try TestTokens(signer: .rotated, kid: "kid-rotated").token()
            #expect(try verifier.uid(forToken: oldToken) == "user-123")
            #expect(refusal { try verifier.uid(forToken: newToken) }?.code == .unknownKey)

            // The operator's job replaces the file atomically (a temporary file renamed into place).
            try googleCertificateJSON(["kid-rotated": .rotated]).write(to: URL(fileURLWithPath: path), options: .atomic)
            let reloaded = try store.reload()

            #expect(reloaded.keyIDs == ["kid-rotated"])
            #expect(store.certificates.keyIDs == ["kid-rotated"])
            #expect(try verifier.uid(forToken: newToken) == "user-123")
            #expect(refusal { try verifier.uid(forToken: oldToken) }?.code == .unknownKey)
        }
    }

    @Test func aFailedReloadKeepsTheKeysInUse() throws {
        try withAuthTestDirectory { directory in
            let url = directory.appendingPathComponent("securetoken.json")
            try googleCertificateJSON(["kid-primary": .primary]).write(to: url)
            let store = try GoogleCertificateStore(contentsOfFile: url.path)
            try Data("{\"kid-primary\": \"-----BEGIN CERT".utf8).write(to: url)  // a half-written file

            #expect(configurationRefusal { try store.reload() } != nil)
            #expect(store.certificates.keyIDs == ["kid-primary"])

            try FileManager.default.removeItem(at: url)
            #expect(configurationRefusal { try store.reload() } != nil)
            #expect(store.certificates.keyIDs == ["kid-primary"])
        }
    }

    @Test func aStoreOverAFixedKeySetIgnoresReload() throws {
        let store = GoogleCertificateStore(try GoogleCertificates(parsingJSON: googleCertificateJSON(["k": .primary])))
        #expect(store.path == nil)
        #expect(try store.reload().keyIDs == ["k"])
    }

    private func p256CertificatePEM() throws -> String {
        let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let name = try DistinguishedName { CommonName("ec") }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey,
            notValidBefore: authTestNow - 86_400, notValidAfter: authTestNow + 86_400, issuer: name, subject: name,
            signatureAlgorithm: .ecdsaWithSHA256, extensions: Certificate.Extensions(), issuerPrivateKey: key)
        return try certificate.serializeAsPEM().pemString
    }
}

extension Data {
    /// This JSON object with `entries` added.
    fileprivate func mergingJSON(_ entries: [String: String]) -> Data {
        var object = try! JSONSerialization.jsonObject(with: self) as! [String: Any]
        for (key, value) in entries { object[key] = value }
        return authJSON(object)
    }
}
