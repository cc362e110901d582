import Foundation
import FuzzTargets
import Testing

/// The structure-aware mutator of classic receipts: what it changes inside a receipt keeps every enclosing
/// DER length right, so the receipt still parses and verification goes on to the signature.
@Suite struct DERMutatorTests {
    static func seed(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: FuzzFiles.corpus(.classicReceipt).appendingPathComponent(name)))
    }

    @Test(arguments: ["valid-ber-one-purchase", "valid-der-signed-attributes"])
    func longerDateKeepsTheReceiptWellFormed(_ name: String) async throws {
        let receipt = try Self.seed(name)
        let date = Array("2030-06-06T12:00:00Z".utf8)
        let sameInstant = Array("2030-06-06T12:00:00.000+00:00".utf8)
        // libFuzzer's byte mutator, replaced by one that only lengthens the creation date.
        let lengthen: ([UInt8], Int) -> [UInt8] = { bytes, _ in bytes == date ? sameInstant : bytes }
        let mutated = (0..<UInt32(5000)).lazy
            .map { DERMutator.mutate(receipt, maxSize: 16 * 1024, seed: $0, mutateBytes: lengthen) }
            .first { $0.firstRange(of: sameInstant) != nil }
        let lengthened = try #require(mutated, "no seed picked the creation date's leaf")
        #expect(lengthened.count == receipt.count + sameInstant.count - date.count)

        // Well-formed, chain valid at the same instant: refused only because the signature covers the date.
        let harness = try FuzzHarness(pki: try FuzzPKI.load())
        #expect(await harness.run(.classicReceipt, receipt) == .accepted)
        #expect(await harness.run(.classicReceipt, lengthened) == .refused("invalid_signature"))
    }

    @Test func inputThatIsNoDERIsMutatedAsBytes() {
        let bytes = Array("not DER at all".utf8)
        let mutated = DERMutator.mutate(bytes, maxSize: 64, seed: 1) { input, _ in input.reversed() }
        #expect(mutated == bytes.reversed())
    }
}
