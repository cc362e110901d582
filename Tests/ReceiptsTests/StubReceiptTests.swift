import Crypto
import Foundation
import Receipts
import Testing

@Suite("Stub receipts")
struct StubReceiptTests {
    static let secret = "test-stub-secret"

    static func receipt(_ entries: [StubReceipt.InAppEntry]? = nil, bundleId: String = Fixtures.bundleId) -> StubReceipt
    {
        StubReceipt(
            bundleId: bundleId, creationDateMs: 1_763_000_500_000,
            inApp: entries ?? [
                .init(
                    productId: Fixtures.productId, transactionId: "stub-1", purchaseDateMs: 1_763_000_000_000,
                    priceMilli: 1_200_000, currency: "KRW", appAccountToken: UUID(uuidString: Fixtures.appAccountToken))
            ])
    }

    static func verifier(secret: String? = StubReceiptTests.secret, acceptsStubs: Bool = true) throws -> ReceiptVerifier
    {
        try ReceiptVerifier(
            configuration: VerifierConfiguration(
                bundleId: Fixtures.bundleId, acceptsStubReceipts: acceptsStubs, stubSecret: secret))
    }

    @Test("a signed stub verifies and decodes every field")
    func signed() async throws {
        let receipt = Self.receipt()
        let text = receipt.text(signedWith: Self.secret)
        let transaction = try await Self.verifier().prove(receipt: text, productId: Fixtures.productId)
        #expect(transaction.store == .stub)
        #expect(transaction.environment == .stub)
        #expect(transaction.transactionId == "stub-1")
        #expect(transaction.originalTransactionId == "stub-1")
        #expect(transaction.bundleId == Fixtures.bundleId)
        #expect(transaction.productId == Fixtures.productId)
        #expect(transaction.productType == .nonConsumable)
        #expect(transaction.purchaseDate == Date(timeIntervalSince1970: 1_763_000_000))
        #expect(transaction.originalPurchaseDate == Date(timeIntervalSince1970: 1_763_000_000))
        #expect(transaction.signedDate == Date(timeIntervalSince1970: 1_763_000_500))
        #expect(transaction.priceMilli == 1_200_000)
        #expect(transaction.currency == "KRW")
        #expect(transaction.ownershipType == .purchased)
        #expect(transaction.appAccountToken == UUID(uuidString: Fixtures.appAccountToken))
        #expect(transaction.evidenceSHA256 == Array(SHA256.hash(data: Array(receipt.canonicalText.utf8))))
        // Without a product named, a one-entry receipt proves its entry.
        #expect(try await Self.verifier().prove(receipt: text, productId: nil).transactionId == "stub-1")
    }

    @Test("the documented example text parses")
    func documentedExample() async throws {
        let text = """
            shopledger-stub-receipt/1
            bundle_id: com.memolease.sesac1
            environment: Stub
            receipt_creation_date_ms: 1763790000000
            in_app:
            - product_id: com.memolease.sesac1.sprout1
              transaction_id: stub-0f4e2d8c-3b51-4a57-9d1e-6f0c2b7a9e13
              purchase_date_ms: 1763790000000
              price: 1200000
              currency: KRW
            """
        let transaction = try await Self.verifier(secret: nil).prove(receipt: text, productId: nil)
        #expect(transaction.transactionId == "stub-0f4e2d8c-3b51-4a57-9d1e-6f0c2b7a9e13")
        #expect(transaction.priceMilli == 1_200_000)
    }

    @Test("the signature covers content, not formatting: CRLF, indentation and key order do not matter")
    func canonicalForm() async throws {
        let signed = Self.receipt().text(signedWith: Self.secret)
        var lines = signed.split(separator: "\n").map(String.init)
        lines.swapAt(1, 2)  // bundle_id <-> environment
        lines.swapAt(6, 7)  // transaction_id <-> original_transaction_id
        let reformatted = lines.map { "   " + $0.trimmingCharacters(in: .whitespaces) + "  " }.joined(
            separator: "\r\n\r\n")
        let transaction = try await Self.verifier().prove(receipt: reformatted, productId: Fixtures.productId)
        #expect(transaction.evidenceSHA256 == Array(SHA256.hash(data: Array(Self.receipt().canonicalText.utf8))))
    }

    @Test("with a secret, an unsigned stub is refused")
    func unsigned() async throws {
        let text = Self.receipt().text(signedWith: nil)
        let refusal = await refusal {
            _ = try await Self.verifier().prove(receipt: text, productId: Fixtures.productId)
        }
        #expect(refusal?.reason == .invalidSignature)
        // Without a secret it is accepted (development).
        #expect(
            try await Self.verifier(secret: nil).prove(receipt: text, productId: Fixtures.productId).productId
                == Fixtures.productId)
    }

    @Test("forged stubs are refused")
    func forged() async throws {
        let signed = Self.receipt().text(signedWith: Self.secret)
        let verifier = try Self.verifier()
        let changed = [
            signed.replacingOccurrences(of: "price: 1200000", with: "price: 1"),
            signed.replacingOccurrences(of: "transaction_id: stub-1", with: "transaction_id: stub-2"),
            signed.replacingOccurrences(of: "sprout1", with: "sprout2"),
            Self.receipt().text(signedWith: "another-secret"),
        ]
        for text in changed {
            #expect(
                await refusalReason { _ = try await verifier.prove(receipt: text, productId: nil) } == .invalidSignature
            )
        }
        // Appending an entry after signing is refused too.
        let appended = signed.replacingOccurrences(
            of: "signature:", with: "- product_id: x\n  transaction_id: y\n  purchase_date_ms: 1\nsignature:")
        #expect(
            await refusalReason { _ = try await verifier.prove(receipt: appended, productId: "x") } == .invalidSignature
        )
    }

    @Test("the requested product must be in the receipt")
    func productAbsent() async throws {
        let verifier = try Self.verifier()
        let text = Self.receipt().text(signedWith: Self.secret)
        let refusal = await refusal {
            _ = try await verifier.prove(receipt: text, productId: "com.memolease.sesac1.background7")
        }
        #expect(refusal?.reason == .productNotInReceipt)
    }

    @Test("several entries: the one for the product (the latest if repeated); none named is refused")
    func severalEntries() async throws {
        let receipt = Self.receipt([
            .init(productId: "p.a", transactionId: "t-a", purchaseDateMs: 1_000),
            .init(productId: "p.b", transactionId: "t-b1", purchaseDateMs: 2_000),
            .init(productId: "p.b", transactionId: "t-b2", purchaseDateMs: 3_000),
        ])
        let text = receipt.text(signedWith: Self.secret)
        let verifier = try Self.verifier()
        #expect(try await verifier.prove(receipt: text, productId: "p.a").transactionId == "t-a")
        #expect(try await verifier.prove(receipt: text, productId: "p.b").transactionId == "t-b2")
        #expect(
            await refusalReason { _ = try await verifier.prove(receipt: text, productId: nil) } == .productNotInReceipt)
    }

    @Test("bundle id, environment and product type are checked")
    func contentChecks() async throws {
        let verifier = try Self.verifier()
        let otherApp = Self.receipt(bundleId: "com.example.other").text(signedWith: Self.secret)
        #expect(
            await refusalReason { _ = try await verifier.prove(receipt: otherApp, productId: nil) } == .wrongBundleId)

        var production = Self.receipt()
        production.environment = .production
        #expect(
            await refusalReason {
                _ = try await verifier.prove(receipt: production.text(signedWith: Self.secret), productId: nil)
            } == .wrongEnvironment)

        let consumable = Self.receipt([
            .init(productId: "p", transactionId: "t", purchaseDateMs: 1, productType: .consumable)
        ])
        #expect(
            await refusalReason {
                _ = try await verifier.prove(receipt: consumable.text(signedWith: Self.secret), productId: nil)
            } == .unsupportedProductType)
    }

    @Test("a server that does not accept stubs refuses them")
    func notAccepted() async throws {
        let production = try Self.verifier(secret: nil, acceptsStubs: false)
        let text = Self.receipt().text(signedWith: Self.secret)
        #expect(
            await refusalReason { _ = try await production.prove(receipt: text, productId: nil) } == .stubNotAccepted)
    }

    static let header = "shopledger-stub-receipt/1\nbundle_id: com.memolease.sesac1\nenvironment: Stub\n"
    static let entry = "- product_id: p\n  transaction_id: t\n  purchase_date_ms: 1\n"

    @Test(
        "malformed stubs are refused",
        arguments: [
            "shopledger-stub-receipt/2\nbundle_id: a",
            header + "receipt_creation_date_ms: 1\nin_app:",  // no entries
            header + "bundle_id: x\nreceipt_creation_date_ms: 1\nin_app:\n" + entry,  // repeated key
            header + "in_app:\n" + entry,  // no creation date
            header + "receipt_creation_date_ms: 1\nin_app:\n" + entry + "  colour: red",  // unknown key
            header
                + "receipt_creation_date_ms: 1\nin_app:\n- product_id: p\n  transaction_id: t\n  purchase_date_ms: now",
            header + "receipt_creation_date_ms: 1\nin_app:\n" + entry + "  price: 12.5\n  currency: KRW",
            header + "receipt_creation_date_ms: 1\nin_app:\n" + entry + "  price: 1200",  // price without currency
            header + "receipt_creation_date_ms: 1\nin_app:\n" + entry + "  price: 1200\n  currency: krw",
            header + "receipt_creation_date_ms: 1\nin_app:\n" + entry + "signature: hmac-sha256:abc",
            header + "receipt_creation_date_ms: 1\nin_app:\n" + entry + "signature: hmac-sha256:"
                + String(repeating: "0", count: 64) + "\n" + entry,  // signature not last
            header
                + "receipt_creation_date_ms: 1\nin_app:\n- product_id: prödüct\n  transaction_id: t\n  purchase_date_ms: 1",
            header + "receipt_creation_date_ms: 1\nin_app:\n- transaction_id: t\n  purchase_date_ms: 1",  // no product
            header + "receipt_creation_date_ms: 1\nin_app:\n" + entry + "  app_account_token: not-a-uuid",
        ])
    func malformed(text: String) async throws {
        let verifier = try Self.verifier(secret: nil)
        #expect(await refusalReason { _ = try await verifier.prove(receipt: text, productId: nil) } == .malformed)
    }

    @Test("too many entries or too much text is refused")
    func bounded() async throws {
        let verifier = try Self.verifier(secret: nil)
        let many = Self.receipt(
            (0..<101).map { .init(productId: "p\($0)", transactionId: "t\($0)", purchaseDateMs: 1) })
        #expect(
            await refusalReason { _ = try await verifier.prove(receipt: many.text(signedWith: nil), productId: "p1") }
                == .malformed)
        let long = Self.receipt().text(signedWith: nil) + String(repeating: "\n", count: 70_000)
        #expect(await refusalReason { _ = try await verifier.prove(receipt: long, productId: nil) } == .malformed)
    }
}
