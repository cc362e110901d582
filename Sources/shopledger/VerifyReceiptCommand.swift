import ArgumentParser
import Foundation
import Receipts

/// `shopledger verify-receipt`: verifies a classic App Store receipt offline and prints the verdict, the
/// reason and every in-app entry, for support staff. Exit status 0 when valid, 1 when refused.
struct VerifyReceiptCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-receipt",
        abstract: "Verify a classic App Store receipt (base64 PKCS#7) offline and print every purchase in it.",
        discussion: """
            Checks what the server checks: the PKCS#7 container (at most 4 certificates), the dates, SHA-256, \
            the signature, the certificate chain to the receipt root certificates (Apple Inc. Root by default) \
            at the receipt's creation date with Apple's OIDs, then bundle id and environment. Exit status: 0 \
            valid, 1 refused.
            """)

    @Option(
        name: .customLong("receipt-root-cert"),
        help: "Trusted receipt root certificate, PEM or DER (repeatable; default: built-in Apple Inc. Root).")
    var receiptRootCertificateFiles: [String] = []

    @OptionGroup var checks: ProofCheckOptions

    @Argument(help: "The base64 receipt, or @FILE to read it (base64 or the binary receipt file) from FILE.")
    var input: String

    func run() async throws {
        let receipt = try readInput()
        var configuration = try checks.configuration()
        configuration.maxInputBytes = Self.maximumInputBytes
        if !receiptRootCertificateFiles.isEmpty {
            configuration.receiptRootCertificates = try ProofCheckOptions.roots(receiptRootCertificateFiles)
        }
        let verifier: ReceiptVerifier
        do {
            verifier = try ReceiptVerifier(configuration: configuration)
        } catch {
            throw ValidationError(error.message)
        }

        var lines: [String]
        var refused = false
        do {
            let verified = try await verifier.verifyAppReceipt(receipt)
            lines = ["verdict: valid", "kind: app receipt"] + Self.describe(verified.receipt)
            lines.append("evidence_sha256: \(verified.evidenceSHA256.map { String(format: "%02x", $0) }.joined())")
            lines.append("purchases: \(verified.transactions.count)")
            for (index, transaction) in verified.transactions.enumerated() {
                lines.append("purchase \(index + 1):")
                lines += VerifyTransactionCommand.describe(transaction, indent: "  ")
            }
        } catch {
            refused = true
            lines = ["verdict: refused", "reason: \(error.reason)", "message: \(error.message)"]
            if let unverified = AppReceipt(unverifiedBase64: receipt) {
                lines += ["", "receipt (as sent, unverified):"] + Self.describe(unverified)
                lines.append("purchases: \(unverified.purchases.count)")
                for (index, purchase) in unverified.purchases.enumerated() {
                    lines.append("  purchase \(index + 1): \(purchase.productId) transaction \(purchase.transactionId)")
                }
            }
        }
        print(lines.joined(separator: "\n"))
        if refused { throw ExitCode(1) }
    }

    /// Receipts are read up to 1 MiB (the verifier's ceiling for a classic receipt).
    static let maximumInputBytes = 1 << 20

    static func describe(_ receipt: AppReceipt) -> [String] {
        [
            "receipt_type: \(receipt.receiptType)",
            "environment: \(receipt.environment)",
            "bundle_id: \(receipt.bundleId)",
            "app_version: \(receipt.appVersion)",
            "creation_date: \(receipt.creationDate.ISO8601Format())",
        ]
    }

    /// The argument, or the file it names: base64 text as it is, a binary receipt (it starts with a DER
    /// SEQUENCE byte, which base64 never does) encoded to base64.
    private func readInput() throws -> String {
        guard input.hasPrefix("@") else { return input }
        let path = String(input.dropFirst())
        guard let handle = FileHandle(forReadingAtPath: path) else { throw ValidationError("Cannot open \(path).") }
        defer { try? handle.close() }
        let limit = Self.maximumInputBytes
        guard let data = try handle.read(upToCount: limit + 1) else { return "" }
        guard data.count <= limit else { throw ValidationError("\(path) is over \(limit) bytes.") }
        if data.first == 0x30 { return data.base64EncodedString() }
        return String(decoding: data, as: UTF8.self)
    }
}
