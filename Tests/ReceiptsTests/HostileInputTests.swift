import Crypto
import Foundation
import Receipts
import SwiftASN1
import TestSupport
import Testing
import X509

/// What an attacker found (docs/security.md): dates from an unverified payload reached a `try!` in
/// swift-certificates and killed the process; a receipt's look-alike certificates made chain building
/// exponential. Each is refused now, before any expensive or trapping step.
@Suite("Hostile proofs")
struct HostileInputTests {
    typealias C = ClassicFixtures

    @Test(
        "a notification whose signedDate is out of range is malformed, not a crash",
        arguments: [1e17, -1e15, 0, 1_199_000_000_000])
    func notificationDate(milliseconds: Double) async throws {
        let verifier = try Fixtures.verifier(try TestPKI())
        let payload = try HostileProofs.notification(signedDateMilliseconds: milliseconds)
        let refusal = await refusal { _ = try await verifier.verifyNotification(payload) }
        #expect(refusal?.reason == .malformed)
        #expect(refusal?.message.contains("signedDate") == true, "\(String(describing: refusal))")
    }

    @Test("a signed transaction whose signedDate is days ahead is malformed; within a day it verifies")
    func transactionDate() async throws {
        let pki = try TestPKI()
        let verifier = try Fixtures.verifier(pki)
        let ahead = pki.sign(Fixtures.transaction(signedAt: Date().addingTimeInterval(3 * 24 * 3600)))
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(ahead) } == .malformed)
        let soon = pki.sign(Fixtures.transaction(signedAt: Date().addingTimeInterval(3600)))
        #expect(try await verifier.verifyTransaction(soon).transactionId == "2000000812345678")
    }

    @Test("a signed transaction's purchaseDate out of range is malformed")
    func purchaseDate() async throws {
        let pki = try TestPKI()
        let verifier = try Fixtures.verifier(pki)
        for milliseconds in [1e17, 0] {
            let jws = pki.sign(Fixtures.transaction(["purchaseDate": milliseconds]))
            let refusal = await refusal { _ = try await verifier.verifyTransaction(jws) }
            #expect(refusal?.reason == .malformed)
            #expect(refusal?.message.contains("purchaseDate") == true)
        }
    }

    @Test(
        "a classic receipt created at the edges of RFC 3339 is malformed_receipt, not a crash",
        arguments: ["0000-01-01T00:00:00+23:59", "9999-12-31T23:59:59-23:59", "2007-12-31T23:59:59Z"])
    func receiptCreationDate(created: String) async throws {
        let receipt = TestReceiptPKI.shared.receipt(TestReceipt(creationDate: created, purchases: [C.purchase()]))
        let refusal = await refusal { _ = try await C.verifier().prove(receipt: receipt, productId: nil) }
        #expect(refusal?.reason == .malformedReceipt)
        #expect(refusal?.message.contains("creation date") == true, "\(String(describing: refusal))")
    }

    @Test("an in-app entry dated in the future or before 2008 is malformed_receipt")
    func receiptEntryDate() async throws {
        for date in ["9999-12-31T23:59:59Z", "1970-01-01T00:00:00Z"] {
            let purchase = TestReceipt.Purchase(productId: C.face3, transactionId: "7", purchaseDate: date)
            let receipt = TestReceiptPKI.shared.receipt(TestReceipt(purchases: [purchase]))
            let refusal = await refusal { _ = try await C.verifier().proveEach(receipt: receipt) }
            #expect(refusal?.reason == .malformedReceipt)
            #expect(refusal?.message.contains("purchase date") == true)
        }
    }

    @Test("a receipt carrying more than four certificates is refused before any is parsed")
    func tooManyCertificates() async throws {
        let receipt = try HostileProofs.lookAlikeChainReceipt(
            layers: 12, payload: C.receipt().payload(), topIssuer: TestReceiptPKI.shared.root.subject)
        let refusal = await refusal { _ = try await C.verifier().prove(receipt: receipt, productId: nil) }
        #expect(refusal?.reason == .malformedReceipt)
        #expect(refusal?.message.contains("25 certificates") == true, "\(String(describing: refusal))")
    }

    @Test("look-alike issuers within the limit are refused as an untrusted chain")
    func lookAlikesWithinLimit() async throws {
        let receipt = try HostileProofs.lookAlikeChainReceipt(
            layers: 1, payload: C.receipt().payload(), topIssuer: TestReceiptPKI.shared.root.subject)
        #expect(
            await refusalReason { _ = try await C.verifier().prove(receipt: receipt, productId: nil) }
                == .untrustedChain)
    }

    @Test("the signature is checked with the presented key before any chain is built")
    func signatureBeforeChain() async throws {
        // A stranger's CA (same names, other keys): untrusted. Its receipt with a broken signature is
        // refused for the signature, which is checked first.
        let stranger = try TestReceiptPKI(.init(ownRootKey: true))
        var bytes = stranger.sign(C.receipt().payload(), container: .der)
        bytes[bytes.count - 1] ^= 0x01
        let refusal = await refusal {
            _ = try await C.verifier().prove(receipt: Data(bytes).base64EncodedString(), productId: nil)
        }
        #expect(refusal?.reason == .invalidSignature)

        let pki = try TestPKI()
        let strangerPKI = try TestPKI()
        let forged = strangerPKI.sign(Fixtures.transaction(), signingKey: P256.Signing.PrivateKey())
        #expect(
            await refusalReason { _ = try await Fixtures.verifier(pki).verifyTransaction(forged) } == .invalidSignature)
    }

    /// `certificate`'s DER with the seconds of its notBefore (the first UTCTime) set to 61, which
    /// swift-asn1 accepts and swift-certificates asserts against when it makes a `Date` of it.
    static func withLeapSecond(_ certificate: Certificate) throws -> Certificate {
        var der = TestPKI.der(certificate)
        let start = try #require((0..<der.count - 15).first { der[$0] == 0x17 && der[$0 + 1] == 0x0D })
        der[start + 2 + 10] = UInt8(ascii: "6")
        der[start + 2 + 11] = UInt8(ascii: "1")
        return try Certificate(derEncoded: der)
    }

    @Test("a certificate whose validity has 61 seconds is refused, never turned into a date")
    func leapSecondValidity() async throws {
        let stranger = try TestPKI()
        let leaf = try Self.withLeapSecond(stranger.leaf)
        let x5c = [leaf, stranger.intermediate, stranger.root].map { Data(TestPKI.der($0)).base64EncodedString() }
        let jws = stranger.sign(Fixtures.transaction(), header: ["alg": "ES256", "x5c": x5c])
        let jwsRefusal = await refusal { _ = try await Fixtures.verifier(try TestPKI()).verifyTransaction(jws) }
        #expect(jwsRefusal?.reason == .untrustedChain && jwsRefusal?.message.contains("60 or more seconds") == true)

        let pki = TestReceiptPKI.shared
        let receipt = pki.sign(
            C.receipt().payload(), container: .der,
            certificates: [try Self.withLeapSecond(pki.leaf), pki.intermediate, pki.root])
        let receiptRefusal = await refusal {
            _ = try await C.verifier().prove(receipt: Data(receipt).base64EncodedString(), productId: nil)
        }
        #expect(receiptRefusal?.reason == .malformedReceipt)
        #expect(receiptRefusal?.message.contains("60 or more seconds") == true)
    }

    @Test("a cancelled verification stops with cancelled, not a verdict")
    func cancelled() async throws {
        let verifier = try C.verifier()
        let receipt = TestReceiptPKI.shared.receipt(C.receipt())
        let task = Task {
            await refusalReason {
                withUnsafeCurrentTask { $0?.cancel() }
                _ = try await verifier.prove(receipt: receipt, productId: nil)
            }
        }
        #expect(await task.value == .cancelled)
    }
}
