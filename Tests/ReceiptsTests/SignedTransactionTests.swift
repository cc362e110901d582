import Crypto
import Foundation
import Receipts
import TestSupport
import Testing

@Suite("App Store signed transactions")
struct SignedTransactionTests {
    let pki: TestPKI
    let verifier: ReceiptVerifier

    init() throws {
        pki = try TestPKI()
        verifier = try Fixtures.verifier(pki)
    }

    @Test("a valid transaction decodes every field")
    func decodesEveryField() async throws {
        let signedAt = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded() - 60)
        let jws = pki.sign(Fixtures.transaction(signedAt: signedAt))
        let transaction = try await verifier.verifyTransaction(jws)

        #expect(transaction.store == .appStore)
        #expect(transaction.environment == .production)
        #expect(transaction.transactionId == "2000000812345678")
        #expect(transaction.originalTransactionId == "2000000812345670")
        #expect(transaction.bundleId == Fixtures.bundleId)
        #expect(transaction.productId == Fixtures.productId)
        #expect(transaction.productType == .nonConsumable)
        #expect(transaction.purchaseDate == Date(timeIntervalSince1970: 1_763_000_000))
        #expect(transaction.originalPurchaseDate == Date(timeIntervalSince1970: 1_762_000_000))
        #expect(transaction.signedDate == signedAt)
        #expect(transaction.priceMilli == 1_200_000)
        #expect(transaction.currency == "KRW")
        #expect(transaction.storefront == "KOR")
        #expect(transaction.ownershipType == .purchased)
        #expect(transaction.appAccountToken == UUID(uuidString: Fixtures.appAccountToken))
        #expect(transaction.revocationDate == nil)
        #expect(transaction.revocationReason == nil)
        #expect(transaction.revocationType == nil)
        #expect(transaction.evidenceSHA256 == Array(SHA256.hash(data: Array(jws.utf8))))
        #expect(transaction.evidenceSHA256Hex.count == 64)
    }

    @Test("revocation, family sharing and a missing price decode")
    func revokedFamilySharedWithoutPrice() async throws {
        let jws = pki.sign(
            Fixtures.transaction(
                [
                    "revocationDate": Int64(1_763_500_000_000), "revocationReason": 1,
                    "revocationType": "REFUND_PRORATED", "revocationPercentage": 50_000,
                    "inAppOwnershipType": "FAMILY_SHARED",
                ],
                removing: ["price", "currency", "appAccountToken", "storefront"]))
        let transaction = try await verifier.verifyTransaction(jws)
        #expect(transaction.revocationDate == Date(timeIntervalSince1970: 1_763_500_000))
        #expect(transaction.revocationReason == 1)
        #expect(transaction.revocationType == "REFUND_PRORATED")
        #expect(transaction.revocationPercentage == 50_000)
        #expect(transaction.ownershipType == .familyShared)
        #expect(transaction.priceMilli == nil)
        #expect(transaction.currency == nil)
        #expect(transaction.appAccountToken == nil)
        #expect(transaction.storefront == nil)
    }

    @Test("Sandbox is accepted by default and recorded as Sandbox")
    func sandboxRecordedAsSuch() async throws {
        let transaction = try await verifier.verifyTransaction(
            pki.sign(Fixtures.transaction(["environment": "Sandbox"])))
        #expect(transaction.environment == .sandbox)
    }

    @Test("base64url segments with padding verify too")
    func paddedSegments() async throws {
        let transaction = try await verifier.verifyTransaction(pki.sign(Fixtures.transaction(), padded: true))
        #expect(transaction.transactionId == "2000000812345678")
    }

    @Test("surrounding whitespace is ignored and not part of the evidence")
    func surroundingWhitespace() async throws {
        let jws = pki.sign(Fixtures.transaction())
        let transaction = try await verifier.verifyTransaction("  \(jws)\r\n")
        #expect(transaction.evidenceSHA256 == Array(SHA256.hash(data: Array(jws.utf8))))
    }

    @Test("alg other than ES256 is refused", arguments: ["none", "HS256", "RS256", "ES384", "es256"])
    func unsupportedAlgorithm(alg: String) async {
        let jws = pki.sign(Fixtures.transaction(), header: ["alg": alg, "x5c": pki.x5c])
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(jws) } == .unsupportedAlgorithm)
        // `alg: none` with an empty signature, as an attacker would send it.
        let unsigned = jws.split(separator: ".").prefix(2).joined(separator: ".") + "."
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(unsigned) } == .unsupportedAlgorithm)
    }

    @Test("a tampered payload is refused")
    func tamperedPayload() async throws {
        let jws = pki.sign(Fixtures.transaction())
        let parts = jws.split(separator: ".").map(String.init)
        let forged = TestPKI.base64URL(
            TestPKI.json(Fixtures.transaction(["productId": "com.memolease.sesac1.sprout9"])))
        let tampered = [parts[0], forged, parts[2]].joined(separator: ".")
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(tampered) } == .invalidSignature)
    }

    @Test("a tampered signature is refused")
    func tamperedSignature() async throws {
        let jws = pki.sign(Fixtures.transaction())
        var parts = jws.split(separator: ".").map(String.init)
        var signature = Array(parts[2].utf8)
        signature[10] = signature[10] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        parts[2] = String(decoding: signature, as: UTF8.self)
        #expect(
            await refusalReason { _ = try await verifier.verifyTransaction(parts.joined(separator: ".")) }
                == .invalidSignature)

        // Signed by some other key, with the genuine chain in the header.
        let otherKey = P256.Signing.PrivateKey()
        let wrongKey = pki.sign(Fixtures.transaction(), signingKey: otherKey)
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(wrongKey) } == .invalidSignature)

        // A DER signature, or a truncated one, is not a JWS ES256 signature.
        let truncated = parts.prefix(2).joined(separator: ".") + "." + String(parts[2].prefix(40))
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(truncated) } == .invalidSignature)
    }

    @Test("another app's transaction is refused as wrong_bundle_id")
    func wrongBundle() async {
        let jws = pki.sign(Fixtures.transaction(["bundleId": "com.example.other"]))
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(jws) } == .wrongBundleId)
    }

    @Test("environments outside the accepted set are refused", arguments: ["Xcode", "LocalTesting", "Staging"])
    func wrongEnvironment(environment: String) async {
        let jws = pki.sign(Fixtures.transaction(["environment": environment]))
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(jws) } == .wrongEnvironment)
    }

    @Test("Sandbox is refused when only Production is configured")
    func productionOnly() async throws {
        let strict = try ReceiptVerifier(configuration: Fixtures.configuration(pki, environments: [.production]))
        let jws = pki.sign(Fixtures.transaction(["environment": "Sandbox"]))
        #expect(await refusalReason { _ = try await strict.verifyTransaction(jws) } == .wrongEnvironment)
    }

    @Test("product types outside the accepted set are refused; the set is configurable")
    func productTypes() async throws {
        let consumable = pki.sign(Fixtures.transaction(["type": "Consumable"]))
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(consumable) } == .unsupportedProductType)
        for type in ["Auto-Renewable Subscription", "Non-Renewing Subscription"] {
            let jws = pki.sign(Fixtures.transaction(["type": type]))
            #expect(await refusalReason { _ = try await verifier.verifyTransaction(jws) } == .unsupportedProductType)
        }
        let lenient = try ReceiptVerifier(
            configuration: Fixtures.configuration(pki, productTypes: [.nonConsumable, .consumable]))
        #expect(try await lenient.verifyTransaction(consumable).productType == .consumable)
    }

    @Test("payloads missing required fields or with bad values are malformed")
    func missingFields() async {
        for field in [
            "transactionId", "bundleId", "productId", "type", "purchaseDate", "environment", "inAppOwnershipType",
        ] {
            let jws = pki.sign(Fixtures.transaction(removing: [field]))
            #expect(await refusalReason { _ = try await verifier.verifyTransaction(jws) } == .malformed, "\(field)")
        }
        let noSignedDate = pki.sign(Fixtures.transaction(removing: ["signedDate"]))
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(noSignedDate) } == .malformed)
        let priceWithoutCurrency = pki.sign(Fixtures.transaction(removing: ["currency"]))
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(priceWithoutCurrency) } == .malformed)
        let unknownOwnership = pki.sign(Fixtures.transaction(["inAppOwnershipType": "BORROWED"]))
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(unknownOwnership) } == .malformed)
        let textPrice = pki.sign(Fixtures.transaction(["price": "1200"]))
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(textPrice) } == .malformed)
    }

    @Test("shapes that are not a JWS are malformed")
    func notAJWS() async {
        let jws = pki.sign(Fixtures.transaction())
        let parts = jws.split(separator: ".").map(String.init)
        let inputs = [
            "", "   ", "abc", "a.b", "a.b.c.d", parts[0] + "." + parts[1], jws + ".x",
            "!!!." + parts[1] + "." + parts[2],  // header not base64url
            parts[0] + ".$$$$." + parts[2],  // payload not base64url
            parts[0] + "+." + parts[1] + "." + parts[2],  // standard-alphabet character
            parts[0] + "." + parts[1] + "A." + parts[2],  // impossible base64 length
            TestPKI.base64URL(Data("[1,2]".utf8)) + "." + parts[1] + "." + parts[2],  // header not an object
            TestPKI.base64URL(Data("{\"alg\":\"ES256\"".utf8)) + "." + parts[1] + "." + parts[2],  // broken JSON
            parts[0] + "." + TestPKI.base64URL(Data("not json".utf8)) + "." + parts[2],
            "ünïcödé.ü.ü",
        ]
        for input in inputs {
            #expect(
                await refusalReason { _ = try await verifier.verifyTransaction(input) } == .malformed,
                "\(input.prefix(30))")
        }
        let critical = pki.sign(Fixtures.transaction(), header: ["alg": "ES256", "x5c": pki.x5c, "crit": ["b64"]])
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(critical) } == .malformed)
        let noAlg = pki.sign(Fixtures.transaction(), header: ["x5c": pki.x5c])
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(noAlg) } == .malformed)
    }

    @Test("oversized input is refused before decoding")
    func oversized() async {
        let huge = String(repeating: "A", count: VerifierConfiguration.defaultMaxInputBytes + 1)
        #expect(await refusal { _ = try await verifier.verifyTransaction(huge) }?.reason == .malformed)
        let jws = pki.sign(Fixtures.transaction())
        let padded = jws + String(repeating: " ", count: VerifierConfiguration.defaultMaxInputBytes)
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(padded) } == .malformed)

        // A header segment over the header limit is refused even when the whole input fits.
        let bigHeader = pki.sign(
            Fixtures.transaction(),
            header: ["alg": "ES256", "x5c": pki.x5c, "pad": String(repeating: "x", count: 12_000)])
        let message = await refusal { _ = try await verifier.verifyTransaction(bigHeader) }
        #expect(message?.reason == .malformed)
        #expect(message?.message.contains("header") == true)

        // A payload that fits in 64 KiB of base64url but pushes the total over it.
        let bigPayload = pki.sign(Fixtures.transaction(["padding": String(repeating: "y", count: 60_000)]))
        #expect(await refusalReason { _ = try await verifier.verifyTransaction(bigPayload) } == .malformed)
    }

    @Test("deeply nested JSON in the header or payload is refused, not a crash")
    func deeplyNested() async {
        let jws = pki.sign(Fixtures.transaction())
        let parts = jws.split(separator: ".").map(String.init)
        let deepHeader = TestPKI.base64URL(
            Data(("{\"alg\":\"ES256\",\"x5c\":" + String(repeating: "[", count: 5_000)).utf8))
        let deepPayload = TestPKI.base64URL(Data(String(repeating: "[", count: 40_000).utf8))
        for input in [deepHeader + "." + parts[1] + "." + parts[2], parts[0] + "." + deepPayload + "." + parts[2]] {
            #expect(await refusalReason { _ = try await verifier.verifyTransaction(input) } == .malformed)
            #expect(throws: ReceiptRefusal.self) { try UnverifiedJWS(input) }
        }
    }

    @Test("random single-byte mutations never verify and never crash")
    func mutations() async throws {
        let jws = Array(pki.sign(Fixtures.transaction()).utf8)
        var generator = SeededGenerator(seed: 20_261_122)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ \u{0}".utf8)
        for _ in 0..<300 {
            var mutated = jws
            let index = Int(generator.next() % UInt64(mutated.count))
            let replacement = alphabet[Int(generator.next() % UInt64(alphabet.count))]
            guard mutated[index] != replacement else { continue }
            mutated[index] = replacement
            let input = String(decoding: mutated, as: UTF8.self)
            #expect(await refusalReason { _ = try await verifier.verifyTransaction(input) } != nil, "byte \(index)")
        }
    }
}
