import Crypto
import Foundation
import Receipts
import TestSupport
import Testing
@_spi(CMS) import X509
import _CryptoExtras

@Suite("Classic app receipts")
struct ClassicReceiptTests {
    typealias C = ClassicFixtures

    static func date(_ text: String) -> Date { try! Date(text, strategy: .iso8601) }

    @Test(
        "a one-purchase receipt proves its entry, in Apple's BER layout and in DER",
        arguments: [
            TestReceiptPKI.Container.berIndefinite, .der,
        ])
    func onePurchase(container: TestReceiptPKI.Container) async throws {
        let pki = TestReceiptPKI.shared
        let bytes = pki.sign(C.receipt().payload(), container: container)
        let receipt = Data(bytes).base64EncodedString()
        #expect(ReceiptField(classifying: receipt) == .appReceipt)
        let transaction = try await C.verifier().prove(receipt: receipt, productId: C.face3)
        #expect(transaction.store == .appStore)
        #expect(transaction.environment == .production)
        #expect(transaction.transactionId == "2000000900000001")
        #expect(transaction.originalTransactionId == "2000000900000001")
        #expect(transaction.bundleId == Fixtures.bundleId)
        #expect(transaction.productId == C.face3)
        #expect(transaction.productType == .nonConsumable)
        #expect(transaction.purchaseDate == Self.date("2026-11-01T09:30:00Z"))
        #expect(transaction.priceMilli == nil && transaction.currency == nil, "receipts carry no price")
        #expect(transaction.revocationDate == nil, "an empty cancellation date is no cancellation")
        #expect(transaction.evidenceSHA256 == Array(SHA256.hash(data: bytes)))
        // Without a product id, a one-purchase receipt names its purchase.
        #expect(try await C.verifier().prove(receipt: receipt, productId: nil).transactionId == "2000000900000001")
    }

    @Test("several purchases: the posted product selects its entry; proveEach returns every one")
    func severalPurchases() async throws {
        let receipt = TestReceiptPKI.shared.receipt(
            C.receipt([
                C.purchase(C.face3, "1001"),
                TestReceipt.Purchase(
                    productId: C.background2, transactionId: "1002", originalTransactionId: "0999",
                    purchaseDate: "2026-10-02T10:00:00.250Z", originalPurchaseDate: "2026-09-30T08:00:00+09:00",
                    cancellationDate: "2026-10-05T12:00:00Z"),
                C.purchase("com.memolease.sesac1.sprout4", "1003"),
            ]))
        let verifier = try C.verifier()
        let background = try await verifier.prove(receipt: receipt, productId: C.background2)
        #expect(background.transactionId == "1002")
        #expect(background.originalTransactionId == "0999")
        #expect(background.purchaseDate == Self.date("2026-10-02T10:00:00Z").addingTimeInterval(0.25))
        #expect(background.originalPurchaseDate == Self.date("2026-09-29T23:00:00Z"))
        #expect(background.revocationDate == Self.date("2026-10-05T12:00:00Z"))
        #expect(try await verifier.prove(receipt: receipt, productId: C.face3).transactionId == "1001")

        let each = try await verifier.proveEach(receipt: receipt)
        #expect(each.map { $0.accepted?.transactionId } == ["1001", "1002", "1003"])
        let verified = try await verifier.verifyAppReceipt(receipt)
        #expect(verified.receipt.purchases.count == 3)
        #expect(verified.receipt.appVersion == "42")
        // Several entries and no product named: which one is meant is not for the server to guess.
        #expect(
            await refusalReason { _ = try await verifier.prove(receipt: receipt, productId: nil) }
                == .productNotInReceipt)
    }

    @Test("a product bought, refunded and bought again proves the live purchase")
    func refundedThenBoughtAgain() async throws {
        let receipt = TestReceiptPKI.shared.receipt(
            C.receipt([
                TestReceipt.Purchase(
                    productId: C.face3, transactionId: "2001", purchaseDate: "2026-01-01T00:00:00Z",
                    cancellationDate: "2026-01-02T00:00:00Z"),
                TestReceipt.Purchase(productId: C.face3, transactionId: "2002", purchaseDate: "2025-12-01T00:00:00Z"),
            ]))
        let transaction = try await C.verifier().prove(receipt: receipt, productId: C.face3)
        #expect(transaction.transactionId == "2002")
        #expect(transaction.revocationDate == nil)
    }

    @Test("a receipt with no purchase is valid and proves nothing")
    func noPurchase() async throws {
        let receipt = TestReceiptPKI.shared.receipt(C.receipt([]))
        let verifier = try C.verifier()
        #expect(try await verifier.verifyAppReceipt(receipt).transactions.isEmpty)
        #expect(try await verifier.proveEach(receipt: receipt).isEmpty)
        #expect(
            await refusalReason { _ = try await verifier.prove(receipt: receipt, productId: C.face3) }
                == .productNotInReceipt)
    }

    @Test("the product must be in the receipt")
    func productAbsent() async throws {
        let receipt = TestReceiptPKI.shared.receipt(C.receipt())
        let refusal = await refusal { _ = try await C.verifier().prove(receipt: receipt, productId: C.background2) }
        #expect(refusal?.reason == .productNotInReceipt)
        #expect(refusal?.message.contains(C.background2) == true)
    }

    @Test("subscriptions are refused as a product type the shop does not sell")
    func subscription() async throws {
        let receipt = TestReceiptPKI.shared.receipt(
            C.receipt([
                TestReceipt.Purchase(
                    productId: C.face3, transactionId: "3001", subscriptionExpirationDate: "2026-12-01T00:00:00Z")
            ]))
        #expect(
            await refusalReason { _ = try await C.verifier().prove(receipt: receipt, productId: C.face3) }
                == .unsupportedProductType)
        let each = try await C.verifier().proveEach(receipt: receipt)
        #expect(each.count == 1)
        #expect(each.first?.transaction.transactionId == "3001")
        #expect(each.first?.refusal?.reason == .unsupportedProductType)
    }

    @Test("bundle id and environment must match the configuration")
    func bundleAndEnvironment() async throws {
        let pki = TestReceiptPKI.shared
        let other = pki.receipt(TestReceipt(bundleId: "com.example.other", purchases: [C.purchase()]))
        #expect(
            await refusalReason { _ = try await C.verifier().prove(receipt: other, productId: C.face3) }
                == .wrongBundleId)

        for type in ["ProductionSandbox", "Sandbox"] {
            let receipt = pki.receipt(C.receipt(type: type))
            #expect(try await C.verifier().prove(receipt: receipt, productId: C.face3).environment == .sandbox)
            #expect(
                await refusalReason {
                    _ = try await C.verifier(environments: [.production]).prove(receipt: receipt, productId: C.face3)
                } == .wrongEnvironment)
        }
        for type in ["Xcode", "Staging"] {
            let receipt = pki.receipt(C.receipt(type: type))
            #expect(
                await refusalReason { _ = try await C.verifier().prove(receipt: receipt, productId: C.face3) }
                    == .wrongEnvironment)
        }
        let production = pki.receipt(C.receipt())
        #expect(
            await refusalReason {
                _ = try await C.verifier(environments: [.sandbox]).prove(receipt: production, productId: C.face3)
            } == .wrongEnvironment)
    }

    @Test("an intermediate without the WWDR OID, or a leaf without the receipt-signing OID, is untrusted")
    func missingOIDs() async throws {
        for (options, oid) in [
            (TestReceiptPKI.Options(intermediateHasAppleOID: false), "1.2.840.113635.100.6.2.1"),
            (TestReceiptPKI.Options(leafHasAppleOID: false), "1.2.840.113635.100.6.11.1"),
        ] {
            let pki = try TestReceiptPKI(options)
            let receipt = pki.receipt(C.receipt())
            let refusal = await refusal { _ = try await C.verifier(pki).prove(receipt: receipt, productId: C.face3) }
            #expect(refusal?.reason == .untrustedChain)
            #expect(refusal?.message.contains(oid) == true, "\(refusal?.message ?? "")")
        }
    }

    @Test(
        "a receipt from another root is untrusted, its own root inside notwithstanding; so are test receipts under Apple's root"
    )
    func otherRoot() async throws {
        let stranger = try TestReceiptPKI(.init(ownRootKey: true))
        let receipt = stranger.receipt(C.receipt())
        #expect(
            await refusalReason { _ = try await C.verifier().prove(receipt: receipt, productId: C.face3) }
                == .untrustedChain)
        let production = try ReceiptVerifier(configuration: VerifierConfiguration(bundleId: Fixtures.bundleId))
        #expect(production.configuration.receiptRootCertificates == [.appleIncRoot])
        #expect(
            await refusalReason {
                _ = try await production.prove(receipt: TestReceiptPKI.shared.receipt(C.receipt()), productId: C.face3)
            } == .untrustedChain)
    }

    @Test("the chain is validated at the receipt's creation date")
    func creationDate() async throws {
        let now = Date()
        let pki = try TestReceiptPKI(
            .init(
                leafNotBefore: now.addingTimeInterval(-3 * TestPKI.year),
                leafNotAfter: now.addingTimeInterval(-TestPKI.year)))
        let old = TestReceipt(
            creationDate: TestReceipt.timestamp(now.addingTimeInterval(-2 * TestPKI.year)), purchases: [C.purchase()])
        #expect(try await C.verifier(pki).prove(receipt: pki.receipt(old), productId: C.face3).productId == C.face3)
        let fresh = TestReceipt(creationDate: TestReceipt.timestamp(now), purchases: [C.purchase()])
        let refusal = await refusal {
            _ = try await C.verifier(pki).prove(receipt: pki.receipt(fresh), productId: C.face3)
        }
        #expect(refusal?.reason == .untrustedChain)
        let message = refusal?.message ?? ""
        #expect(message.contains("creation date") && message.contains("signing (valid "), "\(message)")
        #expect(message.contains("has expired") && message.count < 400, "\(message)")
    }

    @Test("tampered content and tampered or foreign signatures are invalid")
    func tampering() async throws {
        let pki = TestReceiptPKI.shared
        let verifier = try C.verifier()
        for container in [TestReceiptPKI.Container.berIndefinite, .der] {
            var bytes = pki.sign(C.receipt().payload(), container: container)
            let product = Array(C.face3.utf8)
            let at = try #require(bytes.firstRange(of: product))
            bytes[at.upperBound - 1] = UInt8(ascii: "9")  // sprout3 → sprout9
            let tampered = Data(bytes).base64EncodedString()
            #expect(
                await refusalReason { _ = try await verifier.prove(receipt: tampered, productId: nil) }
                    == .invalidSignature)

            var signature = pki.sign(C.receipt().payload(), container: container)
            // The signature is the last OCTET STRING: in DER it ends the file, in BER before the 8 EOC octets.
            signature[signature.count - (container == .der ? 1 : 9)] ^= 0x01
            let flipped = Data(signature).base64EncodedString()
            #expect(
                await refusalReason { _ = try await verifier.prove(receipt: flipped, productId: nil) }
                    == .invalidSignature)
        }
        let foreignKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let foreign = Data(pki.sign(C.receipt().payload(), signingKey: foreignKey)).base64EncodedString()
        #expect(
            await refusalReason { _ = try await verifier.prove(receipt: foreign, productId: nil) } == .invalidSignature)
    }

    @Test("SHA-1 receipts and receipts chained through a SHA-1 intermediate are weak")
    func sha1() async throws {
        let sha1Receipt = TestReceiptPKI.shared.receipt(C.receipt(), digest: .sha1)
        #expect(
            await refusalReason { _ = try await C.verifier().prove(receipt: sha1Receipt, productId: C.face3) }
                == .weakSignatureAlgorithm)
        let oldIntermediate = try TestReceiptPKI(.init(intermediateDigest: .sha1))
        let chained = oldIntermediate.receipt(C.receipt())
        let refusal = await refusal {
            _ = try await C.verifier(oldIntermediate).prove(receipt: chained, productId: C.face3)
        }
        #expect(refusal?.reason == .weakSignatureAlgorithm)
        #expect(refusal?.message.contains("intermediate") == true)
    }

    @Test("signed attributes are honoured, and swift-certificates' own CMS encoder produces receipts we accept")
    func signedAttributes() async throws {
        let pki = TestReceiptPKI.shared
        let payload = C.receipt().payload()
        let verifier = try C.verifier()
        for container in [TestReceiptPKI.Container.berIndefinite, .der] {
            let receipt = Data(pki.sign(payload, container: container, signedAttributes: true)).base64EncodedString()
            #expect(try await verifier.prove(receipt: receipt, productId: C.face3).productId == C.face3)
        }
        // An independent encoder: DER, sha256WithRSAEncryption, content-type, message-digest and signing-time.
        let cms = try CMS.sign(
            payload, signatureAlgorithm: .sha256WithRSAEncryption,
            additionalIntermediateCertificates: [pki.intermediate],
            certificate: pki.leaf, privateKey: .init(pki.leafKey), signingTime: Date(), detached: false)
        #expect(
            try await verifier.prove(receipt: Data(cms).base64EncodedString(), productId: C.face3).productId == C.face3)
        // Other content of the same length under the same signed attributes: the message digest no longer matches.
        let otherPayload = TestReceipt(
            creationDate: TestReceipt(purchases: []).creationDate,
            purchases: [C.purchase("com.memolease.sesac1.sprout4")]
        ).payload()
        let original = TestReceipt(creationDate: TestReceipt(purchases: []).creationDate, purchases: [C.purchase()])
            .payload()
        let signed = try CMS.sign(
            original, signatureAlgorithm: .sha256WithRSAEncryption,
            additionalIntermediateCertificates: [pki.intermediate],
            certificate: pki.leaf, privateKey: .init(pki.leafKey), signingTime: Date(), detached: false)
        #expect(otherPayload.count == original.count)
        var mixed = signed
        mixed.replaceSubrange(try #require(mixed.firstRange(of: original)), with: otherPayload)
        #expect(
            await refusalReason {
                _ = try await verifier.prove(receipt: Data(mixed).base64EncodedString(), productId: nil)
            }
                == .invalidSignature)
    }

    @Test("a configured root may sign receipts itself (Xcode's StoreKit Testing certificate)")
    func selfSignedSigner() async throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let name = try DistinguishedName { CommonName("StoreKit Testing in Xcode") }
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey),
            notValidBefore: Date().addingTimeInterval(-TestPKI.year),
            notValidAfter: Date().addingTimeInterval(TestPKI.year),
            issuer: name, subject: name, signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
            },
            issuerPrivateKey: .init(key))
        let cms = try CMS.sign(
            TestReceipt(receiptType: "Xcode", purchases: [C.purchase()]).payload(),
            signatureAlgorithm: .sha256WithRSAEncryption, certificate: certificate, privateKey: .init(key),
            detached: false)
        let receipt = Data(cms).base64EncodedString()
        let root = try RootCertificate(derEncoded: TestPKI.der(certificate))
        let development = try ReceiptVerifier(
            configuration: VerifierConfiguration(
                bundleId: Fixtures.bundleId, acceptedEnvironments: [.xcode], receiptRootCertificates: [root]))
        #expect(try await development.prove(receipt: receipt, productId: C.face3).environment == .xcode)
        let production = try ReceiptVerifier(
            configuration: VerifierConfiguration(bundleId: Fixtures.bundleId, acceptedEnvironments: [.xcode]))
        #expect(
            await refusalReason { _ = try await production.prove(receipt: receipt, productId: C.face3) }
                == .untrustedChain)
    }

    @Test("base64 as forms mangle it: line breaks, and + turned into spaces")
    func formMangling() async throws {
        let receipt = TestReceiptPKI.shared.receipt(C.receipt())
        let wrapped = Data(try #require(Data(base64Encoded: receipt))).base64EncodedString(
            options: .lineLength76Characters)
        #expect(wrapped.contains("\r\n"))
        let spaced = " " + wrapped.replacingOccurrences(of: "+", with: " ") + "\n"
        #expect(try await C.verifier().prove(receipt: spaced, productId: C.face3).productId == C.face3)
    }
}
