import Foundation
import Receipts
import TestSupport
import Testing

/// Whatever arrives in the `receipt` field, the classic-receipt path answers with a refusal, never a crash,
/// and nothing it accepts says anything the signed receipt does not.
@Suite("Classic app receipts: malformed input")
struct ClassicReceiptMalformedTests {
    typealias C = ClassicFixtures
    typealias B = DERBuilder

    static let signedBER = TestReceiptPKI.shared.sign(
        C.receipt([C.purchase(), C.purchase(C.background2, "1002")]).payload())
    static let signedDER = TestReceiptPKI.shared.sign(
        C.receipt([C.purchase(), C.purchase(C.background2, "1002")]).payload(), container: .der)

    static func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

    @Test("every truncation is malformed_receipt (or not even recognised as a receipt)")
    func truncation() async throws {
        let verifier = try C.verifier()
        for bytes in [Self.signedBER, Self.signedDER] {
            for length in stride(from: 0, to: bytes.count, by: 3) {
                let reason = await refusalReason {
                    _ = try await verifier.prove(receipt: Self.base64(Array(bytes.prefix(length))), productId: nil)
                }
                #expect(
                    reason == .malformedReceipt || reason == .malformed,
                    "length \(length): \(reason?.rawValue ?? "accepted")")
            }
        }
    }

    @Test("mutated bytes are refused, or accepted with exactly the signed purchases")
    func mutation() async throws {
        let verifier = try C.verifier()
        let expected = try await verifier.proveEach(receipt: Self.base64(Self.signedDER)).map {
            $0.accepted?.transactionId
        }
        #expect(expected == ["2000000900000001", "1002"])
        let known: Set<ReceiptRefusal.Reason> = [
            .malformedReceipt, .malformed, .untrustedChain, .invalidSignature, .weakSignatureAlgorithm, .wrongBundleId,
            .wrongEnvironment,
        ]
        var generator = SeededGenerator(seed: 17)
        var refused = 0
        for bytes in [Self.signedBER, Self.signedDER] {
            for _ in 0..<400 {
                var mutated = bytes
                for _ in 0..<Int.random(in: 1...3, using: &generator) {
                    let index = Int.random(in: 0..<mutated.count, using: &generator)
                    mutated[index] = UInt8.random(in: 0...255, using: &generator)
                }
                do {
                    let accepted = try await verifier.proveEach(receipt: Self.base64(mutated))
                    #expect(accepted.map { $0.accepted?.transactionId } == expected)
                } catch {
                    refused += 1
                    #expect(known.contains(error.reason), "\(error)")
                }
            }
        }
        #expect(refused > 600, "most mutations touch signed or structural bytes")
    }

    @Test("oversized receipts are refused before decoding")
    func oversized() async throws {
        let verifier = try C.verifier()
        let huge = Self.base64(Self.signedBER + Array(repeating: 0, count: 70_000))
        let refusal = await refusal { _ = try await verifier.prove(receipt: huge, productId: nil) }
        #expect(refusal?.reason == .malformedReceipt)
        #expect(refusal?.message.contains("limit") == true)
        // A server configured for larger bodies still stops classic receipts at 1 MiB.
        var configuration = C.configuration()
        configuration.maxInputBytes = 4 << 20
        let roomy = try ReceiptVerifier(configuration: configuration)
        let enormous = Self.base64(Self.signedBER + Array(repeating: 0, count: 1 << 20))
        #expect(
            await refusalReason { _ = try await roomy.prove(receipt: enormous, productId: nil) } == .malformedReceipt)
    }

    @Test("deep nesting is refused without exhausting the stack")
    func deepNesting() async throws {
        let verifier = try C.verifier()
        let prefix: [UInt8] = [
            0x30, 0x80, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02, 0xA0, 0x80,
        ]
        for depth in [60, 5_000, 20_000] {
            let nested =
                prefix + Array(repeating: [0x30, 0x80], count: depth).flatMap { $0 }
                + Array(repeating: 0x00, count: 2 * depth + 4)
            #expect(
                await refusalReason { _ = try await verifier.prove(receipt: Self.base64(nested), productId: nil) }
                    == .malformedReceipt)
        }
        // Deep nesting inside the signed content is refused too.
        var payload: [UInt8] = B.integer(1)
        for _ in 0..<200 { payload = B.tlv(0x31, payload) }
        let receipt = Self.base64(TestReceiptPKI.shared.sign(payload))
        #expect(
            await refusalReason { _ = try await verifier.prove(receipt: receipt, productId: nil) } == .malformedReceipt)
    }

    @Test("content that is not a receipt: wrong types, missing fields, bad dates")
    func badContent() async throws {
        let verifier = try C.verifier()
        func refusal(_ payload: [UInt8]) async -> ReceiptRefusal? {
            await ReceiptsTests.refusal {
                _ = try await verifier.verifyAppReceipt(Self.base64(TestReceiptPKI.shared.sign(payload)))
            }
        }
        let attribute = { (type: Int, value: [UInt8]) in
            B.sequence(B.integer(type), B.integer(1), B.octetString(value))
        }
        let base: [[UInt8]] = [
            attribute(0, B.utf8String("Production")), attribute(2, B.utf8String(Fixtures.bundleId)),
            attribute(12, B.ia5String("2026-11-01T00:00:00Z")),
        ]
        #expect(await refusal(B.set(base))?.reason == nil, "a minimal receipt is fine")
        #expect(await refusal(B.sequence(base.flatMap { $0 }))?.reason == .malformedReceipt)
        #expect(await refusal(B.set(Array(base.dropLast())))?.message.contains("creation date") == true)
        #expect(await refusal(B.set(Array(base.dropFirst())))?.message.contains("receipt type") == true)
        #expect(await refusal(B.set([base[0], base[2], attribute(2, B.integer(7))]))?.reason == .malformedReceipt)
        #expect(
            await refusal(B.set([base[0], base[1], attribute(12, B.ia5String("yesterday"))]))?.reason
                == .malformedReceipt)
        #expect(await refusal(B.set([base[0], base[1], attribute(12, B.ia5String(""))]))?.reason == .malformedReceipt)
        let noProduct = attribute(
            17, B.set([attribute(1703, B.utf8String("1")), attribute(1704, B.ia5String("2026-01-01T00:00:00Z"))]))
        #expect(await refusal(B.set(base + [noProduct]))?.message.contains("product id") == true)
        let badEntry = attribute(17, B.utf8String("not a set"))
        #expect(await refusal(B.set(base + [badEntry]))?.reason == .malformedReceipt)
        // Unknown types, even with values of no known shape, are skipped.
        #expect(await refusal(B.set(base + [attribute(9_999, [0xFF, 0xFF]), attribute(-1, [])]))?.reason == nil)
    }

    @Test("not base64, or base64 of something else")
    func notAReceipt() async throws {
        let verifier = try C.verifier()
        // Starts like a receipt (so it is classified as one), then stops being base64.
        let notBase64 = String(Self.base64(Self.signedBER).prefix(400)) + "%%%%" + String(repeating: "A", count: 40)
        #expect(
            await refusalReason { _ = try await verifier.prove(receipt: notBase64, productId: nil) }
                == .malformedReceipt)
        // A PKCS#7 header over data content (no SignedData inside).
        let dataOnly =
            B.indefinite(0x30, B.oid([1, 2, 840, 113_549, 1, 7, 2]) + B.indefinite(0xA0, B.sequence(B.integer(1))))
            + Array(repeating: 0, count: 40)
        #expect(
            await refusalReason { _ = try await verifier.prove(receipt: Self.base64(dataOnly), productId: nil) }
                == .malformedReceipt)
    }
}
