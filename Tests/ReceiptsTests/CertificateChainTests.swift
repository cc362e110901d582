import Crypto
import Foundation
import Receipts
import TestSupport
import Testing

@Suite("x5c certificate chains")
struct CertificateChainTests {
    @Test("a chain to another root is refused")
    func anotherRoot() async throws {
        let trusted = try TestPKI()
        let stranger = try TestPKI(.init(rootName: "ShopLedger Test Root CA"))  // same name, other keys
        let verifier = try Fixtures.verifier(trusted)
        let jws = stranger.sign(Fixtures.transaction())
        let refusal = await refusal { _ = try await verifier.verifyTransaction(jws) }
        #expect(refusal?.reason == .untrustedChain)
        // No chain reached a root, so no policy failed: the message is ours, not swift-certificates'.
        #expect(refusal?.message.contains("does not validate to a configured root certificate") == true)
    }

    @Test("the sender's own root in x5c is not trusted")
    func senderRootIgnored() async throws {
        let trusted = try TestPKI()
        let stranger = try TestPKI()
        let verifier = try Fixtures.verifier(trusted)
        // Genuine leaf and intermediate from the stranger, the trusted root appended: still no chain.
        let x5c = Array(stranger.x5c.prefix(2)) + [trusted.x5c[2]]
        let jws = stranger.sign(Fixtures.transaction(), header: ["alg": "ES256", "x5c": x5c])
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(jws) } == .untrustedChain)
    }

    @Test(
        "an intermediate without Apple's WWDR OID, or a leaf without the receipt-signing OID, is refused",
        arguments: [
            (false, true, "1.2.840.113635.100.6.2.1"),
            (true, false, "1.2.840.113635.100.6.11.1"),
        ])
    func certificateWithoutOID(intermediateHasOID: Bool, leafHasOID: Bool, oid: String) async throws {
        let pki = try TestPKI(.init(intermediateHasAppleOID: intermediateHasOID, leafHasAppleOID: leafHasOID))
        let refusal = await refusal {
            _ = try await Fixtures.verifier(pki).verifyTransaction(pki.sign(Fixtures.transaction()))
        }
        #expect(refusal?.reason == .untrustedChain)
        #expect(refusal?.message.contains(oid) == true)
    }

    /// A PKI whose leaf was valid from two years to one year before `now`.
    static func pkiWithLeafExpired(before now: Date) throws -> TestPKI {
        try TestPKI(
            .init(
                leafNotBefore: now.addingTimeInterval(-2 * TestPKI.year),
                leafNotAfter: now.addingTimeInterval(-TestPKI.year)))
    }

    @Test("a leaf expired at signedDate is refused; one valid at signedDate passes")
    func expiredLeaf() async throws {
        let now = Date()
        let pki = try Self.pkiWithLeafExpired(before: now)
        let verifier = try Fixtures.verifier(pki)
        let refusal = await refusal {
            _ = try await verifier.verifyTransaction(pki.sign(Fixtures.transaction(signedAt: now)))
        }
        #expect(refusal?.reason == .untrustedChain)
        // RFC 5280's own reason, with the certificate it names shortened to its place and validity.
        let message = refusal?.message ?? ""
        #expect(message.contains("at signedDate") && message.contains("leaf (valid "), "\(message)")
        #expect(message.contains("has expired") && message.count < 400, "\(message)")

        // Offline verification uses signedDate, not the clock: signed while the leaf was valid, it passes.
        let old = try await verifier.verifyTransaction(
            pki.sign(Fixtures.transaction(signedAt: now.addingTimeInterval(-1.5 * TestPKI.year))))
        #expect(old.transactionId == "2000000812345678")
    }

    @Test("a cached chain still refuses a signedDate outside the leaf's validity")
    func cacheHonoursValidity() async throws {
        let now = Date()
        let pki = try Self.pkiWithLeafExpired(before: now)
        let verifier = try Fixtures.verifier(pki)
        _ = try await verifier.verifyTransaction(
            pki.sign(Fixtures.transaction(signedAt: now.addingTimeInterval(-1.5 * TestPKI.year))))
        #expect(verifier.cachedChainCount == 1)
        for signedAt in [now, now.addingTimeInterval(-3 * TestPKI.year)] {
            let jws = pki.sign(Fixtures.transaction(signedAt: signedAt))
            #expect(await refusalReason { _ = try await verifier.verifyTransaction(jws) } == .untrustedChain)
        }
    }

    @Test("a verified chain is cached once and reused; capacity 0 disables the cache")
    func cacheReuse() async throws {
        let pki = try TestPKI()
        let verifier = try Fixtures.verifier(pki)
        for index in 0..<5 {
            _ = try await verifier.verifyTransaction(pki.sign(Fixtures.transaction(["transactionId": "t\(index)"])))
        }
        #expect(verifier.cachedChainCount == 1)
        // A cached chain does not excuse a bad signature.
        let forged = pki.sign(Fixtures.transaction(), signingKey: .init())
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(forged) } == .invalidSignature)

        let uncached = try Fixtures.verifier(pki, cacheCapacity: 0)
        _ = try await uncached.verifyTransaction(pki.sign(Fixtures.transaction()))
        #expect(uncached.cachedChainCount == 0)
    }

    @Test("the cache is bounded")
    func cacheBounded() async throws {
        let root = try TestPKI()
        var configuration = Fixtures.configuration(root, cacheCapacity: 2)
        let others = try (0..<3).map { _ in try TestPKI() }
        configuration.rootCertificates = others.map(\.rootCertificate)
        let verifier = try ReceiptVerifier(configuration: configuration)
        for pki in others { _ = try await verifier.verifyTransaction(pki.sign(Fixtures.transaction())) }
        #expect(verifier.cachedChainCount == 2)
    }

    @Test("x5c must hold exactly three certificates")
    func chainLength() async throws {
        let pki = try TestPKI()
        let verifier = try Fixtures.verifier(pki)
        for x5c in [Array(pki.x5c.prefix(2)), Array(pki.x5c.prefix(1)), [], pki.x5c + [pki.x5c[2]]] {
            let jws = pki.sign(Fixtures.transaction(), header: ["alg": "ES256", "x5c": x5c])
            let refusal = await refusal { _ = try await verifier.verifyTransaction(jws) }
            #expect(refusal?.reason == .untrustedChain)
            #expect(refusal?.message.contains("exactly 3") == true)
        }
        let missing = pki.sign(Fixtures.transaction(), header: ["alg": "ES256"])
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(missing) } == .untrustedChain)
    }

    @Test("x5c entries that are not base64 DER certificates are refused")
    func badCertificates() async throws {
        let pki = try TestPKI()
        let verifier = try Fixtures.verifier(pki)
        let bad = [
            ["not base64!", pki.x5c[1], pki.x5c[2]],
            [pki.x5c[0], Data("not a certificate".utf8).base64EncodedString(), pki.x5c[2]],
            [String(repeating: "A", count: 3_000), pki.x5c[1], pki.x5c[2]],
        ]
        for x5c in bad {
            let jws = pki.sign(Fixtures.transaction(), header: ["alg": "ES256", "x5c": x5c])
            #expect(await refusalReason { _ = try await verifier.verifyTransaction(jws) } == .untrustedChain)
        }
        let notStrings = pki.sign(Fixtures.transaction(), header: ["alg": "ES256", "x5c": [1, 2, 3]])
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(notStrings) } == .malformed)
    }
}
