import Foundation
import Receipts
import TestSupport
import Testing

@Suite("The SeSAC receipt field")
struct ReceiptFieldTests {
    /// Base64 of a DER PKCS#7 `signedData` header followed by filler, like the start of an app receipt.
    static func appReceiptLookalike(bytes count: Int = 5_000, indefinite: Bool = false) -> String {
        let oid: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]
        let length: [UInt8] = indefinite ? [0x80] : [0x82, UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF)]
        let body = oid + [0xA0, 0x80] + (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        return Data([0x30] + length + body).base64EncodedString()
    }

    @Test("classification")
    func classification() throws {
        let pki = try TestPKI()
        #expect(ReceiptField(classifying: StubReceiptTests.receipt().text(signedWith: nil)) == .stubReceipt)
        #expect(ReceiptField(classifying: pki.sign(Fixtures.transaction())) == .signedTransaction)
        #expect(ReceiptField(classifying: " \(pki.sign(Fixtures.transaction()))\n") == .signedTransaction)
        #expect(ReceiptField(classifying: Self.appReceiptLookalike()) == .appReceipt)
        #expect(ReceiptField(classifying: Self.appReceiptLookalike(indefinite: true)) == .appReceipt)
        // `+` turned into spaces by a careless form encoder, and line breaks, still read as an app receipt.
        let mangled = Self.appReceiptLookalike().replacingOccurrences(of: "+", with: " ")
        #expect(ReceiptField(classifying: mangled) == .appReceipt)
        for garbage in [
            "", "hello", "eyJhbGciOiJub25lIn0", "MIIT", Data("not a receipt at all, sorry".utf8).base64EncodedString(),
            "🙂🙂🙂",
        ] {
            #expect(ReceiptField(classifying: garbage) == .unrecognised, "\(garbage)")
        }
    }

    @Test("something shaped like a classic app receipt but not one is malformed_receipt, whatever its size")
    func appReceiptLookalikeRefused() async throws {
        let verifier = try Fixtures.verifier(TestPKI())
        for receipt in [
            Self.appReceiptLookalike(bytes: 100), Self.appReceiptLookalike(bytes: 40_000),
            Self.appReceiptLookalike(indefinite: true),
        ] {
            #expect(
                await refusalReason { _ = try await verifier.prove(receipt: receipt, productId: Fixtures.productId) }
                    == .malformedReceipt)
        }
        let oversized = Self.appReceiptLookalike(bytes: 60_000)
        let refusal = await refusal { _ = try await verifier.prove(receipt: oversized, productId: nil) }
        #expect(refusal?.reason == .malformedReceipt)
        #expect(refusal?.message.contains("limit") == true)
        // A genuine classic receipt goes the classic way: here its root is not trusted.
        let genuine = TestReceiptPKI.shared.receipt(ClassicFixtures.receipt())
        #expect(
            await refusalReason { _ = try await verifier.prove(receipt: genuine, productId: nil) } == .untrustedChain)
    }

    @Test("a signed transaction in the receipt field proves its product, and only that one")
    func signedTransactionField() async throws {
        let pki = try TestPKI()
        let verifier = try Fixtures.verifier(pki)
        let jws = pki.sign(Fixtures.transaction())
        #expect(try await verifier.prove(receipt: jws, productId: Fixtures.productId).productId == Fixtures.productId)
        #expect(try await verifier.prove(receipt: jws, productId: nil).productId == Fixtures.productId)
        #expect(
            await refusalReason {
                _ = try await verifier.prove(receipt: jws, productId: "com.memolease.sesac1.background7")
            }
                == .productNotInReceipt)
    }

    @Test("garbage is malformed")
    func garbage() async throws {
        let verifier = try Fixtures.verifier(TestPKI())
        for receipt in ["", "   ", "receipt", "{\"receipt\": 1}", String(repeating: "%", count: 1_000)] {
            #expect(
                await refusalReason { _ = try await verifier.prove(receipt: receipt, productId: nil) } == .malformed)
        }
    }

    @Test("unverified inspection shows header and payload for support staff")
    func inspection() throws {
        let pki = try TestPKI()
        let inspected = try UnverifiedJWS(pki.sign(Fixtures.transaction()))
        #expect(inspected.headerJSON.contains("ES256"))
        #expect(inspected.payloadJSON.contains("\"transactionId\" : \"2000000812345678\""))
        #expect(throws: ReceiptRefusal.self) { try UnverifiedJWS("nope") }
    }
}
