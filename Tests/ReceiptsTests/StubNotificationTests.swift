import Crypto
import Foundation
import Receipts
import Testing

@Suite("Stub notifications")
struct StubNotificationTests {
    static let secret = StubReceiptTests.secret

    static func refund(
        type: VerifiedNotification.NotificationType = .refund, uuid: String = "n-1",
        bundleId: String = Fixtures.bundleId,
        environment: StoreEnvironment = .stub
    ) -> StubNotification {
        StubNotification(
            bundleId: bundleId, environment: environment, notificationType: type, notificationUUID: uuid,
            signedDateMs: 1_763_000_900_000,
            transaction: .init(transactionId: "stub-1", productId: Fixtures.productId, revocationReason: 1))
    }

    @Test("a signed REFUND verifies into a notification about the stub transaction")
    func signedRefund() async throws {
        let stub = Self.refund()
        let notification = try await StubReceiptTests.verifier().verifyNotification(stub.text(signedWith: Self.secret))
        #expect(notification.notificationType == .refund)
        #expect(notification.notificationUUID == "n-1")
        #expect(notification.environment == .stub)
        #expect(notification.signedDate == Date(timeIntervalSince1970: 1_763_000_900))
        #expect(notification.evidenceSHA256 == Array(SHA256.hash(data: Array(stub.canonicalText.utf8))))
        let transaction = try #require(notification.transaction)
        #expect(transaction.store == .stub && transaction.environment == .stub)
        #expect(transaction.transactionId == "stub-1")
        #expect(transaction.productId == Fixtures.productId)
        #expect(transaction.revocationReason == 1)
        #expect(transaction.revocationDate == notification.signedDate)
    }

    @Test("surrounding whitespace does not hide a stub notification (as with stub receipts)")
    func surroundingWhitespace() async throws {
        let text = "\r\n  " + Self.refund().text(signedWith: Self.secret) + "\n\n"
        let notification = try await StubReceiptTests.verifier().verifyNotification(text)
        #expect(notification.notificationUUID == "n-1")
        #expect(notification.environment == .stub)
    }

    @Test("the documented example parses, CRLF line ends and indentation included")
    func documentedExample() async throws {
        let text = """
            shopledger-stub-notification/1\r
              bundle_id: com.memolease.sesac1
            environment: Stub
            notification_type: REFUND_REVERSED
            notification_uuid: 5f0e6c1a-2b3d-4c5e-8f90-a1b2c3d4e5f6
            signed_date_ms: 1763790000000
            transaction_id: stub-0f4e2d8c
            product_id: com.memolease.sesac1.sprout2
            """
        let notification = try await StubReceiptTests.verifier(secret: nil).verifyNotification(text)
        #expect(notification.notificationType == .refundReversed)
        #expect(notification.transaction?.transactionId == "stub-0f4e2d8c")
        #expect(notification.transaction?.ownershipType == .purchased)
        #expect(notification.transaction?.revocationDate == nil)
    }

    @Test("a TEST notification carries no transaction")
    func testNotification() async throws {
        let stub = StubNotification(
            bundleId: Fixtures.bundleId, notificationType: .test, notificationUUID: "t-1", signedDateMs: 1,
            transaction: nil)
        let notification = try await StubReceiptTests.verifier().verifyNotification(stub.text(signedWith: Self.secret))
        #expect(notification.notificationType == .test && notification.transaction == nil)
    }

    @Test("forged, unsigned, foreign, malformed and unaccepted stub notifications are refused with their reason")
    func refusals() async throws {
        let verifier = try StubReceiptTests.verifier()
        let signed = Self.refund().text(signedWith: Self.secret)
        #expect(
            await refusalReason { _ = try await verifier.verifyNotification(Self.refund().text(signedWith: nil)) }
                == .invalidSignature)
        #expect(
            await refusalReason { _ = try await verifier.verifyNotification(Self.refund().text(signedWith: "other")) }
                == .invalidSignature)
        let tampered = signed.replacingOccurrences(of: "transaction_id: stub-1", with: "transaction_id: stub-2")
        #expect(await refusalReason { _ = try await verifier.verifyNotification(tampered) } == .invalidSignature)
        #expect(
            await refusalReason {
                _ = try await verifier.verifyNotification(
                    Self.refund(bundleId: "other.app").text(signedWith: Self.secret))
            } == .wrongBundleId)
        #expect(
            await refusalReason {
                _ = try await verifier.verifyNotification(
                    Self.refund(environment: .production).text(signedWith: Self.secret))
            } == .wrongEnvironment)
        let withUnknownKey = signed.replacingOccurrences(of: "signed_date_ms:", with: "price: 1\nsigned_date_ms:")
        #expect(await refusalReason { _ = try await verifier.verifyNotification(withUnknownKey) } == .malformed)
        let halfTransaction = signed.replacingOccurrences(of: "product_id: \(Fixtures.productId)\n", with: "")
        #expect(await refusalReason { _ = try await verifier.verifyNotification(halfTransaction) } == .malformed)
        let repeated = signed.replacingOccurrences(
            of: "notification_uuid: n-1", with: "notification_uuid: n-1\nnotification_uuid: n-2")
        #expect(await refusalReason { _ = try await verifier.verifyNotification(repeated) } == .malformed)
        let production = try StubReceiptTests.verifier(acceptsStubs: false)
        #expect(await refusalReason { _ = try await production.verifyNotification(signed) } == .stubNotAccepted)
    }

    @Test("every truncation of a signed stub notification is refused, never accepted or crashing")
    func truncations() async throws {
        let verifier = try StubReceiptTests.verifier()
        let text = Array(Self.refund().text(signedWith: Self.secret).utf8)
        for length in 0..<(text.count - 1) {
            // (Cutting only the final newline would leave a complete, valid text: not tried.)
            let prefix = String(decoding: text[..<length], as: UTF8.self)
            #expect(await refusalReason { _ = try await verifier.verifyNotification(prefix) } != nil)
        }
    }
}
