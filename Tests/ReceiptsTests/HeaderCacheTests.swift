import Crypto
import Foundation
import Receipts
import TestSupport
import Testing

/// The JWS header cache changes nothing but the work: every input gets the same verdict (and the same
/// refusal message) from a verifier that caches parsed headers, on first sight and on a cache hit, as
/// from one that parses every header afresh.
@Suite("JWS header cache")
struct HeaderCacheTests {
    let pki: TestPKI

    init() throws {
        pki = try TestPKI()
    }

    /// What a verification came to, comparable across verifiers.
    private static func verdict(_ verifier: ReceiptVerifier, _ input: String) async -> String {
        do {
            let verified = try await verifier.verifyTransaction(input)
            return "verified \(verified.transactionId) \(verified.productId) \(verified.evidenceSHA256)"
        } catch let refusal as ReceiptRefusal {
            return "refused \(refusal.reason.rawValue): \(refusal.message)"
        } catch {
            return "unexpected \(error)"
        }
    }

    /// Headers a client or a forger might send: genuine, awkwardly written, wrong, forged.
    private func inputs() throws -> [String] {
        let genuine = pki.sign(Fixtures.transaction())
        let parts = genuine.split(separator: ".").map(String.init)
        let payload = parts[1]
        let other = try TestPKI()
        func raw(_ headerJSON: String, payload: String = payload, signature: String = parts[2]) -> String {
            TestPKI.base64URL(Data(headerJSON.utf8)) + "." + payload + "." + signature
        }
        let x5c = "[" + pki.x5c.map { "\"\($0)\"" }.joined(separator: ",") + "]"
        return [
            genuine,
            pki.sign(Fixtures.transaction(["transactionId": "2000000812345679"])),  // same header, next payload
            pki.sign(Fixtures.transaction(), padded: true),
            "  " + genuine + "\n",
            // The genuine header with a payload that is not base64url, not JSON, or tampered.
            parts[0] + ".$$$$." + parts[2],
            parts[0] + "." + TestPKI.base64URL(Data("not json".utf8)) + "." + parts[2],
            parts[0] + "." + TestPKI.base64URL(TestPKI.json(Fixtures.transaction(["price": 1]))) + "." + parts[2],
            // Same fields, other bytes: whitespace, escapes, key order, an unknown field, a duplicate alg.
            pki.sign(Fixtures.transaction(), header: ["alg": "ES256", "x5c": pki.x5c, "kid": "k1"]),
            raw("{ \"x5c\" : \(x5c) , \"alg\" : \"ES256\" }"),
            raw("{\"\\u0061lg\":\"ES256\",\"x5c\":\(x5c)}"),
            raw("{\"alg\":\"none\",\"x5c\":\(x5c),\"alg\":\"ES256\"}"),
            raw("{\"alg\":\"ES256\",\"x5c\":\(x5c),\"alg\":\"none\"}"),
            // Refused headers.
            raw("{\"alg\":\"none\",\"x5c\":\(x5c)}"),
            raw("{\"alg\":\"ES256\",\"x5c\":\(x5c),\"crit\":[\"b64\"]}"),
            raw("{\"alg\":\"ES256\",\"x5c\":\(x5c),\"crit\":[]}"),
            raw("{\"x5c\":\(x5c)}"),
            raw("{\"alg\":\"ES256\"}"),
            raw("{\"alg\":256,\"x5c\":\(x5c)}"),
            raw("{\"alg\":\"ES256\",\"x5c\":\"\(pki.x5c[0])\"}"),
            raw("[\"ES256\"]"),
            raw("{\"alg\":\"ES256\",\"x5c\":\(x5c)"),
            raw(""),
            "!!!." + payload + "." + parts[2],
            // Forged: another chain in the header, the genuine chain with a foreign signature, a chain
            // with a foreign leaf.
            other.sign(Fixtures.transaction()),
            pki.sign(Fixtures.transaction(), signingKey: P256.Signing.PrivateKey()),
            pki.sign(Fixtures.transaction(), header: ["alg": "ES256", "x5c": [other.x5c[0], pki.x5c[1], pki.x5c[2]]]),
            pki.sign(
                Fixtures.transaction(), header: ["alg": "ES256", "x5c": ["not base64!", pki.x5c[1], pki.x5c[2]]]),
        ]
    }

    @Test("cached and uncached verifiers give the same verdict on awkward and forged headers")
    func sameVerdicts() async throws {
        let cached = try Fixtures.verifier(pki)
        let uncached = try Fixtures.verifier(pki, cacheCapacity: 0)
        let inputs = try inputs()
        // Twice through the cached verifier: the second pass finds every header that parsed.
        for pass in 1...2 {
            for (index, input) in inputs.enumerated() {
                let expected = await Self.verdict(uncached, input)
                #expect(await Self.verdict(cached, input) == expected, "input \(index), pass \(pass)")
            }
        }
        #expect(inputs.count > 20)
        #expect(uncached.cachedHeaderCount == 0)
        // The genuine header and each distinct header that parsed, none of the refused ones.
        #expect(cached.cachedHeaderCount > 5)
        #expect(cached.cachedHeaderCount < inputs.count - 5)
    }

    @Test("a header that does not parse is not remembered; the cache is bounded")
    func refusedAndBounded() async throws {
        let verifier = try Fixtures.verifier(pki, cacheCapacity: 2)
        let payload = TestPKI.base64URL(TestPKI.json(Fixtures.transaction()))
        for header in ["{\"alg\":\"ES256\"", "[1]", "{\"alg\":7}"] {
            _ = await Self.verdict(verifier, TestPKI.base64URL(Data(header.utf8)) + "." + payload + ".AAAA")
        }
        #expect(verifier.cachedHeaderCount == 0)
        for kid in ["a", "b", "c"] {
            let jws = pki.sign(Fixtures.transaction(), header: ["alg": "ES256", "x5c": pki.x5c, "kid": kid])
            #expect(await Self.verdict(verifier, jws).hasPrefix("verified"))
        }
        #expect(verifier.cachedHeaderCount == 2)
    }
}
