import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Postgres
import Receipts
import ShopServer
import TestSupport
import Testing

/// Every truncation and random byte strings, against the JWS parser (StoreKit 2 transactions and App Store
/// notifications) and the SeSAC form endpoints: only documented refusals, never an acceptance, a 500 or
/// a write. (`MutationFuzzTests` mutates bytes in place; this cuts bodies short and makes them up.)
@Suite("Truncations and random inputs: JWS parser and SeSAC forms")
struct TruncationFuzzTests {
    /// Reasons a cut or garbled JWS may be refused with. Anything else (wrong_bundle_id for a truncated
    /// input, say) would mean the parser read past what it was given.
    static let garbledJWSReasons: Set<ReceiptRefusal.Reason> = [
        .malformed, .invalidSignature, .unsupportedAlgorithm, .untrustedChain,
    ]
    /// Every documented reason (README, docs/openapi.yaml).
    static let documentedReasons: Set<String> = [
        "malformed", "unsupported_algorithm", "untrusted_chain", "invalid_signature", "wrong_bundle_id",
        "wrong_environment",
        "unsupported_product_type", "product_not_in_receipt", "malformed_receipt", "weak_signature_algorithm",
        "stub_not_accepted", "unknown_product",
    ]

    static var seed: UInt64 {
        UInt64(ProcessInfo.processInfo.environment["SHOPLEDGER_FUZZ_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max)
    }

    /// The refusal's reason; nil when accepted; `not_a_refusal` when something other than a refusal was thrown.
    static func reason(_ body: () async throws -> Void) async -> ReceiptRefusal.Reason? {
        do {
            try await body()
            return nil
        } catch let refusal as ReceiptRefusal {
            return refusal.reason
        } catch {
            return ReceiptRefusal.Reason(rawValue: "not_a_refusal")
        }
    }

    /// Random strings: raw bytes (often not UTF-8), base64url soup with dots, and three base64url parts.
    static func randomInputs(count: Int, using random: inout SeededGenerator) -> [String] {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        return (0..<count).map { round in
            let length = Int.random(in: 0...3_000, using: &random)
            switch round % 3 {
            case 0:
                return String(
                    decoding: (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }, as: UTF8.self)
            case 1:
                let soup = alphabet + Array("..=+/ {}\"".utf8)
                return String(decoding: (0..<length).map { _ in soup.randomElement(using: &random)! }, as: UTF8.self)
            default:
                let parts = (0..<3).map { _ in
                    String(
                        decoding: (0..<Int.random(in: 0...(length / 3 + 1), using: &random)).map { _ in
                            alphabet.randomElement(using: &random)!
                        }, as: UTF8.self)
                }
                return parts.joined(separator: ".")
            }
        }
    }

    @Test(
        "every truncation of a signed transaction and of a signed notification is refused as malformed or invalid_signature"
    )
    func jwsTruncations() async throws {
        let verifier = try ReceiptVerifier(configuration: ServerTest.configuration().receipts)
        let jws = ServerTest.signedTransaction(product(.face(2)))
        let notification = ServerTest.signedNotification("REFUND", signedTransaction: jws)
        // Both verify whole, so the refusals below are the truncation's doing.
        _ = try await verifier.verifyTransaction(jws)
        _ = try await verifier.verifyNotification(notification)
        for (name, text) in [("transaction", jws), ("notification", notification)] {
            let bytes = Array(text.utf8)
            var reasons: [ReceiptRefusal.Reason: Int] = [:]
            for length in 0..<bytes.count {
                let prefix = String(decoding: bytes[..<length], as: UTF8.self)
                let reason = await Self.reason {
                    if name == "transaction" {
                        _ = try await verifier.verifyTransaction(prefix)
                    } else {
                        _ = try await verifier.verifyNotification(prefix)
                    }
                }
                reasons[reason ?? ReceiptRefusal.Reason(rawValue: "ACCEPTED"), default: 0] += 1
                #expect(
                    reason.map { [ReceiptRefusal.Reason.malformed, .invalidSignature].contains($0) } == true,
                    "\(name) cut to \(length) of \(bytes.count) bytes: \(reason?.rawValue ?? "accepted")")
            }
            // A cut inside the signature leaves a well-formed JWS whose signature fails; any shorter cut
            // breaks the shape. So the split between the two reasons is exactly at the second dot.
            let signatureStart = bytes.indices.filter { bytes[$0] == UInt8(ascii: ".") }[1] + 1
            #expect(reasons[.malformed] == signatureStart, "\(name): \(reasons)")
            #expect(reasons[.invalidSignature] == bytes.count - signatureStart, "\(name): \(reasons)")
        }
    }

    @Test("random strings are refused by every entry of the prover with a garbled-input reason, never accepted")
    func randomJWS() async throws {
        let seed = Self.seed
        var random = SeededGenerator(seed: seed)
        let verifier = try ReceiptVerifier(configuration: ServerTest.configuration().receipts)
        for input in Self.randomInputs(count: 600, using: &random) {
            let transaction = await Self.reason { _ = try await verifier.verifyTransaction(input) }
            let notification = await Self.reason { _ = try await verifier.verifyNotification(input) }
            let receipt = await Self.reason {
                _ = try await verifier.prove(receipt: input, productId: product(.face(1)))
            }
            #expect(
                transaction.map { Self.garbledJWSReasons.contains($0) } == true,
                "seed \(seed): \(transaction?.rawValue ?? "accepted") for \(input.prefix(80).debugDescription)")
            #expect(
                notification.map { Self.garbledJWSReasons.contains($0) } == true,
                "seed \(seed): \(notification?.rawValue ?? "accepted") for \(input.prefix(80).debugDescription)")
            #expect(
                receipt.map { Self.garbledJWSReasons.union([.malformedReceipt]).contains($0) } == true,
                "seed \(seed): \(receipt?.rawValue ?? "accepted") for \(input.prefix(80).debugDescription)")
        }
    }

    @Test("truncated and random JWS over HTTP: 422 / 400 with a documented code, nothing written")
    func jwsOverHTTP() async throws {
        let seed = Self.seed
        var random = SeededGenerator(seed: seed)
        let jws = ServerTest.signedTransaction(product(.background(2)))
        let notification = ServerTest.signedNotification("REFUND", signedTransaction: jws)
        let inputs =
            stride(from: 0, to: jws.utf8.count, by: 11).map { String(decoding: Array(jws.utf8)[..<$0], as: UTF8.self) }
            + Self.randomInputs(count: 90, using: &random)
        let notificationInputs =
            stride(from: 0, to: notification.utf8.count, by: 29).map {
                String(decoding: Array(notification.utf8)[..<$0], as: UTF8.self)
            }
            + Self.randomInputs(count: 30, using: &random)
        try await withShopServer { client, db in
            _ = try await client.api(.post, "/api/v1/me", uid: "cut")
            let before = try await ledgerRowCounts(db.client)
            for input in inputs {
                let answer = try await client.api(
                    .post, "/api/v1/purchases", uid: "cut", json: ["signedTransaction": input])
                // An empty string is an invalid request (400), not a proof.
                let ok =
                    (answer.status == .unprocessableContent && Self.documentedReasons.contains(answer.errorCode ?? ""))
                    || (input.isEmpty && answer.status == .badRequest)
                #expect(ok, "seed \(seed): \(answer.status) \(answer.body) for \(input.prefix(60).debugDescription)")
                let sesac = try await client.sesac(
                    .post, "/v1/user/shop/ios", uid: "cut",
                    form: [("receipt", input), ("product", product(.background(2)))])
                #expect(
                    sesac.status == .created || (input.isEmpty && sesac.status.code == 501),
                    "seed \(seed): SeSAC \(sesac.status) for \(input.prefix(60).debugDescription)")
            }
            for input in notificationInputs {
                let answer = try await client.api(
                    .post, "/api/v1/notifications/app-store", json: ["signedPayload": input])
                #expect(
                    answer.status == .badRequest && Self.documentedReasons.contains(answer.errorCode ?? ""),
                    "seed \(seed): \(answer.status) \(answer.body)")
            }
            #expect(try await ledgerRowCounts(db.client) == before, "nothing written")
        }
    }

    @Test(
        "every truncation of the SeSAC sign-up, equip and purchase forms, and random bodies: only the contract's statuses; no purchase recorded"
    )
    func formTruncationsAndRandomBodies() async throws {
        let seed = Self.seed
        var random = SeededGenerator(seed: seed)
        let receipt = ServerTest.stubReceipt(product(.face(2)))
        let endpoints: [(path: String, body: [UInt8], allowed: Set<Int>)] = [
            ("/v1/user", Array(formEncode(signUpForm()).utf8), [200, 201, 202, 501]),
            ("/v1/user/shop/item", Array("sesac=0&background=0".utf8), [200, 201, 501]),
            (
                "/v1/user/shop/ios", Array(formEncode([("receipt", receipt), ("product", product(.face(2)))]).utf8),
                [201, 501]
            ),
        ]
        let cases = endpoints.map { path, valid, allowed in
            let bodies =
                (0..<valid.count).map { Array(valid[..<$0]) }
                + (0..<60).map { _ in
                    (0..<Int.random(in: 0...600, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                }
                + (0..<60).map { _ in
                    (0..<Int.random(in: 0...300, using: &random)).map { _ in
                        Array("ab=&%2G%C3%A9%ZZ+0123456789receipt=product=sesac=background=".utf8).randomElement(
                            using: &random)!
                    }
                }
            return (path: path, bodies: bodies, allowed: allowed)
        }
        try await withShopServer { client, db in
            try await client.signUp("forms")
            var round = 0
            for (path, bodies, allowed) in cases {
                for body in bodies {
                    round += 1
                    // Sign-ups go to fresh users, so "already registered" (201) does not hide a refusal.
                    let uid = path == "/v1/user" ? "forms-\(round)" : "forms"
                    let answer = try await client.send(
                        .post, path,
                        headers: [
                            HTTPField.Name("idtoken")!: "dev:\(uid)", .contentType: "application/x-www-form-urlencoded",
                        ],
                        body: body)
                    #expect(
                        allowed.contains(answer.status.code),
                        "seed \(seed) \(path): \(answer.status) for \(String(decoding: body, as: UTF8.self).prefix(120).debugDescription)"
                    )
                }
            }
            #expect(
                try await StormTests.count(db, "SELECT count(*) FROM purchases") == 0,
                "no cut or random purchase form recorded anything")
            let report = try await Reconciler(client: db.client).run()
            #expect(report.passed, "seed \(seed): \(report.text)")
        }
    }
}
