import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Postgres
import Receipts
import TestSupport
import Testing

@testable import ShopServer

@Suite("Mutation fuzzing of the SeSAC form endpoints")
struct MutationFuzzTests {
    /// Flips, drops, duplicates and inserts bytes of a valid body, or cuts it short.
    static func mutate(_ bytes: [UInt8], using random: inout SeededGenerator) -> [UInt8] {
        var bytes = bytes
        for _ in 0..<Int.random(in: 1...4, using: &random) where !bytes.isEmpty {
            let index = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<6, using: &random) {
            case 0: bytes[index] = UInt8.random(in: 0...255, using: &random)
            case 1: bytes.remove(at: index)
            case 2: bytes.insert(contentsOf: bytes[index..<min(bytes.count, index + 8)], at: index)
            case 3:
                bytes.insert(
                    [UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "="), 0xC3, 0x00].randomElement(
                        using: &random)!, at: index)
            case 4: bytes = Array(bytes.prefix(index))
            default: bytes[index] ^= 0x20
            }
        }
        return bytes
    }

    @Test(
        "hundreds of mutated sign-up, equip and purchase bodies get only documented statuses and leave a consistent ledger"
    )
    func mutatedForms() async throws {
        let seed =
            UInt64(ProcessInfo.processInfo.environment["SHOPLEDGER_FUZZ_SEED"] ?? "")
            ?? UInt64.random(in: 1...UInt64.max)
        var random = SeededGenerator(seed: seed)
        let endpoints: [(String, [UInt8], Set<Int>)] = [
            ("/v1/user", Array(formEncode(signUpForm()).utf8), [200, 201, 202, 501]),
            ("/v1/user/shop/item", Array("sesac=0&background=0".utf8), [200, 201, 501]),
            (
                "/v1/user/shop/ios",
                Array(
                    formEncode([("receipt", ServerTest.stubReceipt(product(.face(2)))), ("product", product(.face(2)))])
                        .utf8),
                [200, 201, 501]
            ),
        ]
        let cases = (0..<300).map { round in
            let (path, valid, allowed) = endpoints[round % endpoints.count]
            return (round: round, path: path, body: Self.mutate(valid, using: &random), allowed: allowed)
        }
        try await withShopServer { client, db in
            try await client.signUp("fuzz")
            for (round, path, body, allowed) in cases {
                let uid = round % 7 == 0 ? "fuzz-\(round)" : "fuzz"
                let answer = try await client.send(
                    .post, path,
                    headers: [
                        HTTPField.Name("idtoken")!: "dev:\(uid)", .contentType: "application/x-www-form-urlencoded",
                    ],
                    body: body)
                let ok = allowed.contains(answer.status.code) || (answer.status.code == 406 && uid != "fuzz")
                #expect(
                    ok,
                    "seed \(seed) round \(round) \(path): \(answer.status) for \(String(decoding: body, as: UTF8.self).debugDescription)"
                )
            }
            let report = try await Reconciler(client: db.client).run()
            #expect(report.passed, "seed \(seed): \(report.text)")
        }
    }
}
