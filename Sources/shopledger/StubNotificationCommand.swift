import ArgumentParser
import Foundation
import Receipts

/// `shopledger stub-notification`: mints a stub notification (see Sources/Receipts/STUB-RECEIPTS.md) that
/// refunds, reverses the refund of, or revokes a purchase proven by a stub receipt. Development and tests.
struct StubNotificationCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stub-notification",
        abstract:
            "Print a stub App Store notification (REFUND, REFUND_REVERSED, REVOKE, ...) for development and tests.",
        discussion: """
            Post it as {"signedPayload": ...} to POST /api/v1/notifications/app-store of a server that accepts \
            stub receipts. Signed with HMAC-SHA256 when a secret is given by --stub-secret-file or \
            SHOPLEDGER_STUB_SECRET. The format is described in Sources/Receipts/STUB-RECEIPTS.md.
            """)

    @Option(help: "Notification type: REFUND, REFUND_REVERSED, REVOKE, REFUND_DECLINED, CONSUMPTION_REQUEST or TEST.")
    var type = "REFUND"

    @Option(name: .customLong("transaction"), help: "Transaction id of the stub purchase it is about (not for TEST).")
    var transaction: String?

    @Option(name: .customLong("product"), help: "Product id of that purchase (not for TEST).")
    var product: String?

    @Option(name: .customLong("ownership"), help: "PURCHASED or FAMILY_SHARED.")
    var ownership = "PURCHASED"

    @Option(name: .customLong("revocation-reason"), help: "Apple's revocationReason (0 or 1).")
    var revocationReason: Int32?

    @Option(name: .customLong("uuid"), help: "The notificationUUID (default: a new UUID).")
    var notificationUUID: String?

    @Option(name: .customLong("signed-date-ms"), help: "Signed time in milliseconds since 1970 (default: now).")
    var signedDateMs: Int64?

    @Option(name: .customLong("bundle-id"), help: "The app's bundle id.")
    var bundleId = "com.memolease.sesac1"

    @Option(
        name: .customLong("stub-secret-file"), help: "File holding the HMAC secret (overrides SHOPLEDGER_STUB_SECRET).")
    var secretFile: String?

    @Flag(help: "Print it as a JSON request body {\"signedPayload\": ...}.")
    var json = false

    func validate() throws {
        guard type != "TEST" || (transaction == nil && product == nil) else {
            throw ValidationError("A TEST notification names no transaction.")
        }
        guard type == "TEST" || (transaction != nil && product != nil) else {
            throw ValidationError("Give --transaction and --product of the stub purchase.")
        }
        for value in [type, bundleId, ownership] + [transaction, product, notificationUUID].compactMap({ $0 })
        where !StubReceiptCommand.isStubValue(value) {
            throw ValidationError("'\(value)' is not 1–200 printable ASCII characters without surrounding spaces.")
        }
        if let signedDateMs, signedDateMs < 0 { throw ValidationError("--signed-date-ms must be ≥ 0.") }
    }

    func run() throws {
        let stub = StubNotification(
            bundleId: bundleId, notificationType: .init(rawValue: type),
            notificationUUID: notificationUUID ?? UUID().uuidString.lowercased(),
            signedDateMs: signedDateMs ?? Int64((Date().timeIntervalSince1970 * 1000).rounded()),
            transaction: transaction.flatMap { id in
                product.map { product in
                    StubNotification.Transaction(
                        transactionId: id, productId: product, ownershipType: OwnershipType(rawValue: ownership),
                        revocationReason: revocationReason)
                }
            })
        let text = stub.text(signedWith: try StubSecret.read(file: secretFile))
        if json {
            let data = try JSONEncoder().encode(["signedPayload": text])
            print(String(decoding: data, as: UTF8.self))
        } else {
            print(text, terminator: "")
        }
    }
}
