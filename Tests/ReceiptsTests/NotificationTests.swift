import Crypto
import Foundation
import Receipts
import TestSupport
import Testing

@Suite("App Store Server Notifications V2")
struct NotificationTests {
    let pki: TestPKI
    let verifier: ReceiptVerifier

    init() throws {
        pki = try TestPKI()
        verifier = try Fixtures.verifier(pki)
    }

    @Test(
        "recognised notification types decode with their verified transaction",
        arguments: ["REFUND", "REFUND_REVERSED", "REFUND_DECLINED", "REVOKE", "CONSUMPTION_REQUEST"])
    func recognised(type: String) async throws {
        var transactionFields: [String: Any] = [:]
        if type == "REFUND" || type == "REVOKE" {
            transactionFields = [
                "revocationDate": Int64(1_763_600_000_000), "revocationReason": 0,
                "revocationType": type == "REFUND" ? "REFUND_FULL" : "FAMILY_REVOKE",
            ]
        }
        let signedTransaction = pki.sign(Fixtures.transaction(transactionFields))
        let signedAt = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded() - 60)
        let signedPayload = pki.sign(
            Fixtures.notification(type: type, signedTransaction: signedTransaction, signedAt: signedAt))
        let notification = try await verifier.verifyNotification(signedPayload)

        #expect(notification.notificationType.rawValue == type)
        #expect(notification.isRecognised)
        #expect(notification.subtype == nil)
        #expect(notification.notificationUUID == "002e14d5-51f5-4503-b5a8-c3a1af68eb20")
        #expect(notification.signedDate == signedAt)
        #expect(notification.environment == .production)
        #expect(notification.bundleId == Fixtures.bundleId)
        #expect(notification.appAppleId == 41_234)
        #expect(notification.evidenceSHA256 == Array(SHA256.hash(data: Array(signedPayload.utf8))))
        let transaction = try #require(notification.transaction)
        #expect(transaction.transactionId == "2000000812345678")
        #expect(transaction.evidenceSHA256 == Array(SHA256.hash(data: Array(signedTransaction.utf8))))
        if type == "REFUND" {
            #expect(transaction.revocationDate == Date(timeIntervalSince1970: 1_763_600_000))
            #expect(transaction.revocationType == "REFUND_FULL")
            #expect(transaction.revocationReason == 0)
        }
        if type == "CONSUMPTION_REQUEST" {
            #expect(notification.consumptionRequestReason == "UNINTENDED_PURCHASE")
        }
    }

    @Test("TEST notifications decode without a transaction")
    func testNotification() async throws {
        let notification = try await verifier.verifyNotification(
            pki.sign(Fixtures.notification(type: "TEST", signedTransaction: nil, environment: "Sandbox")))
        #expect(notification.notificationType == .test)
        #expect(notification.isRecognised)
        #expect(notification.environment == .sandbox)
        #expect(notification.transaction == nil)
    }

    @Test("other types decode and are reported as ignored", arguments: ["ONE_TIME_CHARGE", "DID_RENEW", "SUBSCRIBED"])
    func ignored(type: String) async throws {
        let signedTransaction = pki.sign(Fixtures.transaction())
        let notification = try await verifier.verifyNotification(
            pki.sign(Fixtures.notification(type: type, subtype: "INITIAL_BUY", signedTransaction: signedTransaction)))
        #expect(notification.notificationType.rawValue == type)
        #expect(notification.subtype == "INITIAL_BUY")
        #expect(!notification.isRecognised)
        #expect(notification.transaction != nil)
    }

    @Test("a summary notification decodes its bundle id and environment")
    func summary() async throws {
        let payload: [String: Any] = [
            "notificationType": "RENEWAL_EXTENSION", "subtype": "SUMMARY", "notificationUUID": "u-1",
            "signedDate": Fixtures.milliseconds(Date()),
            "summary": ["environment": "Production", "bundleId": Fixtures.bundleId, "appAppleId": 41_234],
        ]
        let notification = try await verifier.verifyNotification(pki.sign(payload))
        #expect(!notification.isRecognised)
        #expect(notification.transaction == nil)
    }

    @Test("a refund of a product type the shop does not sell is still news")
    func refundOfConsumable() async throws {
        let signedTransaction = pki.sign(Fixtures.transaction(["type": "Consumable"]))
        let notification = try await verifier.verifyNotification(
            pki.sign(Fixtures.notification(type: "REFUND", signedTransaction: signedTransaction)))
        #expect(notification.transaction?.productType == .consumable)
    }

    @Test("the nested signedTransactionInfo is verified too")
    func nestedVerified() async throws {
        let stranger = try TestPKI()
        let foreign = stranger.sign(Fixtures.transaction())
        let refusal = await refusal {
            _ = try await verifier.verifyNotification(
                pki.sign(Fixtures.notification(type: "REFUND", signedTransaction: foreign)))
        }
        #expect(refusal?.reason == .untrustedChain)
        #expect(refusal?.message.hasPrefix("signedTransactionInfo:") == true)

        let forged = pki.sign(Fixtures.transaction(), signingKey: .init())
        #expect(
            await refusalReason {
                _ = try await verifier.verifyNotification(
                    pki.sign(Fixtures.notification(type: "REFUND", signedTransaction: forged)))
            } == .invalidSignature)

        let otherApp = pki.sign(Fixtures.transaction(["bundleId": "com.example.other"]))
        #expect(
            await refusalReason {
                _ = try await verifier.verifyNotification(
                    pki.sign(Fixtures.notification(type: "REFUND", signedTransaction: otherApp)))
            } == .wrongBundleId)

        let sandboxTransaction = pki.sign(Fixtures.transaction(["environment": "Sandbox"]))
        #expect(
            await refusalReason {
                _ = try await verifier.verifyNotification(
                    pki.sign(Fixtures.notification(type: "REFUND", signedTransaction: sandboxTransaction)))
            } == .wrongEnvironment)
    }

    @Test("the notification itself must verify and be for this app")
    func outerChecks() async throws {
        let signedTransaction = pki.sign(Fixtures.transaction())
        let stranger = try TestPKI()
        let foreign = stranger.sign(Fixtures.notification(type: "REFUND", signedTransaction: signedTransaction))
        #expect(await refusalReason { _ = try await verifier.verifyNotification(foreign) } == .untrustedChain)

        let otherApp = pki.sign(
            Fixtures.notification(type: "REFUND", signedTransaction: signedTransaction, bundleId: "x.y"))
        #expect(await refusalReason { _ = try await verifier.verifyNotification(otherApp) } == .wrongBundleId)

        let xcode = pki.sign(Fixtures.notification(type: "TEST", signedTransaction: nil, environment: "Xcode"))
        #expect(await refusalReason { _ = try await verifier.verifyNotification(xcode) } == .wrongEnvironment)

        var tampered = pki.sign(Fixtures.notification(type: "REFUND", signedTransaction: signedTransaction))
            .split(separator: ".").map(String.init)
        tampered[1] = TestPKI.base64URL(
            TestPKI.json(Fixtures.notification(type: "REFUND_REVERSED", signedTransaction: signedTransaction)))
        #expect(
            await refusalReason { _ = try await verifier.verifyNotification(tampered.joined(separator: ".")) }
                == .invalidSignature)

        let hs256 = pki.sign(
            Fixtures.notification(type: "TEST", signedTransaction: nil), header: ["alg": "HS256", "x5c": pki.x5c])
        #expect(await refusalReason { _ = try await verifier.verifyNotification(hs256) } == .unsupportedAlgorithm)
    }

    @Test("notifications missing their identity are malformed")
    func malformed() async throws {
        var noUUID = Fixtures.notification(type: "TEST", signedTransaction: nil)
        noUUID["notificationUUID"] = nil
        var noType = Fixtures.notification(type: "TEST", signedTransaction: nil)
        noType["notificationType"] = nil
        var noBody = Fixtures.notification(type: "TEST", signedTransaction: nil)
        noBody["data"] = nil
        for payload in [noUUID, noType, noBody] {
            #expect(await refusalReason { _ = try await verifier.verifyNotification(pki.sign(payload)) } == .malformed)
        }
        #expect(
            await refusalReason { _ = try await verifier.verifyNotification("{\"signedPayload\":1}") } == .malformed)
    }
}
