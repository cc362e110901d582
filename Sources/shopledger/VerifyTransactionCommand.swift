import ArgumentParser
import Foundation
import Receipts

/// `shopledger verify-transaction`: verifies an App Store signed transaction (or a notification's
/// `signedPayload`) offline and prints the verdict, the reason and the decoded payload, for support staff.
/// Exit status 0 when valid, 1 when refused.
struct VerifyTransactionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-transaction",
        abstract: "Verify an App Store signed transaction or notification offline and print what it says.",
        discussion: """
            Checks what the server checks: ES256, the payload's signedDate in range, the signature with the \
            leaf's key, the x5c chain to the root certificates at that signedDate with Apple's OIDs, then \
            bundle id, environment and product type. Exit status: 0 valid, 1 refused.
            """)

    @Option(
        name: .customLong("root-cert"),
        help: "Trusted root certificate, PEM or DER (repeatable; default: built-in Apple Root CA - G3).")
    var rootCertificateFiles: [String] = []

    @OptionGroup var checks: ProofCheckOptions

    @Option(name: .customLong("product-type"), help: "Accepted product type (repeatable; default: Non-Consumable).")
    var productTypes: [String] = []

    @Argument(help: "The JWS compact string, or @FILE to read it from FILE.")
    var input: String

    func run() async throws {
        let jws = try readInput()
        var configuration = try checks.configuration()
        if !rootCertificateFiles.isEmpty {
            configuration.rootCertificates = try ProofCheckOptions.roots(rootCertificateFiles)
        }
        if !productTypes.isEmpty { configuration.acceptedProductTypes = Set(productTypes.map(ProductType.init)) }
        let verifier: ReceiptVerifier
        do {
            verifier = try ReceiptVerifier(configuration: configuration)
        } catch {
            throw ValidationError(error.message)
        }

        let unverified = try? UnverifiedJWS(jws)
        var lines: [String] = []
        var refused = false
        do {
            if unverified?.isNotification == true {
                let notification = try await verifier.verifyNotification(jws)
                lines = ["verdict: valid", "kind: notification"] + Self.describe(notification)
            } else {
                let transaction = try await verifier.verifyTransaction(jws)
                lines = ["verdict: valid", "kind: transaction"] + Self.describe(transaction)
            }
        } catch {
            refused = true
            lines = ["verdict: refused", "reason: \(error.reason)", "message: \(error.message)"]
        }
        if let unverified {
            lines += [
                "", "header (as sent, unverified):", unverified.headerJSON, "payload (as sent, unverified):",
                unverified.payloadJSON,
            ]
        }
        print(lines.joined(separator: "\n"))
        if refused { throw ExitCode(1) }
    }

    private func readInput() throws -> String {
        guard input.hasPrefix("@") else { return input }
        let path = String(input.dropFirst())
        guard let handle = FileHandle(forReadingAtPath: path) else { throw ValidationError("Cannot open \(path).") }
        defer { try? handle.close() }
        let limit = VerifierConfiguration.defaultMaxInputBytes
        guard let data = try handle.read(upToCount: limit + 1) else { return "" }
        guard data.count <= limit else { throw ValidationError("\(path) is over \(limit) bytes.") }
        return String(decoding: data, as: UTF8.self)
    }

    static func describe(_ transaction: VerifiedTransaction, indent: String = "") -> [String] {
        var fields: [(String, String?)] = [
            ("store", transaction.store.rawValue),
            ("environment", transaction.environment.rawValue),
            ("transaction_id", transaction.transactionId),
            ("original_transaction_id", transaction.originalTransactionId),
            ("bundle_id", transaction.bundleId),
            ("product_id", transaction.productId),
            ("product_type", transaction.productType.rawValue),
            ("purchase_date", transaction.purchaseDate.ISO8601Format()),
            ("original_purchase_date", transaction.originalPurchaseDate.ISO8601Format()),
            ("signed_date", transaction.signedDate.ISO8601Format()),
            ("price_milli", transaction.priceMilli.map(String.init)),
            ("currency", transaction.currency),
            ("storefront", transaction.storefront),
            ("ownership_type", transaction.ownershipType.rawValue),
            ("app_account_token", transaction.appAccountToken?.uuidString.lowercased()),
            ("revocation_date", transaction.revocationDate?.ISO8601Format()),
            ("revocation_reason", transaction.revocationReason.map(String.init)),
            ("revocation_type", transaction.revocationType),
            ("revocation_percentage", transaction.revocationPercentage.map(String.init)),
        ]
        fields.append(("evidence_sha256", transaction.evidenceSHA256Hex))
        return fields.compactMap { name, value in value.map { "\(indent)\(name): \($0)" } }
    }

    static func describe(_ notification: VerifiedNotification) -> [String] {
        var lines = [
            "notification_type: \(notification.notificationType)\(notification.isRecognised ? "" : " (ignored by the shop)")",
            "subtype: \(notification.subtype ?? "-")",
            "notification_uuid: \(notification.notificationUUID)",
            "signed_date: \(notification.signedDate.ISO8601Format())",
            "environment: \(notification.environment)",
            "bundle_id: \(notification.bundleId)",
            "evidence_sha256: \(notification.evidenceSHA256Hex)",
        ]
        if let reason = notification.consumptionRequestReason { lines.append("consumption_request_reason: \(reason)") }
        if let transaction = notification.transaction {
            lines.append("transaction:")
            lines += describe(transaction, indent: "  ")
        }
        return lines
    }
}
