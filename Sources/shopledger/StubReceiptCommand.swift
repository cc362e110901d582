import ArgumentParser
import Foundation
import Receipts

/// `shopledger stub-receipt`: mints a stub receipt (see Sources/Receipts/STUB-RECEIPTS.md) for development
/// and tests, signed with HMAC-SHA256 when a secret is available.
struct StubReceiptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stub-receipt",
        abstract: "Print a stub receipt for development and tests.",
        discussion: """
            The receipt is signed with HMAC-SHA256 when a secret is given by --stub-secret-file or the \
            SHOPLEDGER_STUB_SECRET environment variable; servers configured with a secret refuse unsigned stubs. \
            The format is described in Sources/Receipts/STUB-RECEIPTS.md.
            """)

    @Option(name: .customLong("product"), help: "Product id of an in-app entry (repeat for several entries).")
    var products: [String] = []

    @Option(
        name: .customLong("transaction"),
        help: "Transaction id of the entry at the same position (default: stub-<UUID>).")
    var transactions: [String] = []

    @Option(help: "Price in major units of --currency, e.g. 1200 or 0.99 (at most 3 decimals); applies to every entry.")
    var price: String?

    @Option(help: "ISO 4217 currency of --price.")
    var currency = "KRW"

    @Option(name: .customLong("bundle-id"), help: "The app's bundle id.")
    var bundleId = "com.memolease.sesac1"

    @Option(name: .customLong("app-account-token"), help: "A UUID binding the purchase to an app account.")
    var appAccountToken: String?

    @Option(name: .customLong("purchase-date-ms"), help: "Purchase time in milliseconds since 1970 (default: now).")
    var purchaseDateMs: Int64?

    @Option(
        name: .customLong("stub-secret-file"), help: "File holding the HMAC secret (overrides SHOPLEDGER_STUB_SECRET).")
    var secretFile: String?

    @Flag(help: "Print the receipt without a signature line, even when a secret is available.")
    var unsigned = false

    func validate() throws {
        guard !products.isEmpty else { throw ValidationError("Give at least one --product.") }
        guard transactions.count <= products.count else {
            throw ValidationError("There are more --transaction values than --product values.")
        }
        for value in products + transactions + [bundleId] where !Self.isStubValue(value) {
            throw ValidationError("'\(value)' is not 1–200 printable ASCII characters without surrounding spaces.")
        }
        if let price, Self.milliunits(price) == nil {
            throw ValidationError("--price must be a non-negative decimal with at most 3 decimals, e.g. 1200 or 0.99.")
        }
        guard currency.utf8.count == 3, currency.utf8.allSatisfy({ (0x41...0x5A).contains($0) }) else {
            throw ValidationError("--currency must be three capital letters (ISO 4217).")
        }
        if let appAccountToken, UUID(uuidString: appAccountToken) == nil {
            throw ValidationError("--app-account-token must be a UUID.")
        }
        if let purchaseDateMs, purchaseDateMs < 0 { throw ValidationError("--purchase-date-ms must be ≥ 0.") }
    }

    func run() throws {
        let now = Int64((Date().timeIntervalSince1970 * 1000).rounded())
        let purchased = purchaseDateMs ?? now
        let priceMilli = price.flatMap(Self.milliunits)
        let entries = products.enumerated().map { index, product in
            StubReceipt.InAppEntry(
                productId: product,
                transactionId: index < transactions.count
                    ? transactions[index] : "stub-\(UUID().uuidString.lowercased())",
                purchaseDateMs: purchased,
                priceMilli: priceMilli,
                currency: priceMilli == nil ? nil : currency,
                appAccountToken: appAccountToken.flatMap(UUID.init(uuidString:)))
        }
        let receipt = StubReceipt(bundleId: bundleId, creationDateMs: max(now, purchased), inApp: entries)
        print(receipt.text(signedWith: unsigned ? nil : try StubSecret.read(file: secretFile)), terminator: "")
    }

    static func isStubValue(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= 200 && value.utf8.allSatisfy { (0x20...0x7E).contains($0) }
            && value.first != " " && value.last != " "
    }

    /// Exact decimal → milliunits: "1200" → 1_200_000, "0.99" → 990. Nil for anything else.
    static func milliunits(_ text: String) -> Int64? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2, let wholeText = parts.first, !wholeText.isEmpty,
            wholeText.allSatisfy({ $0.isASCII && $0.isNumber }), let whole = Int64(wholeText)
        else { return nil }
        var fraction: Int64 = 0
        if parts.count == 2 {
            let digits = parts[1]
            guard (1...3).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                let value = Int64(digits)
            else { return nil }
            fraction = value * [1, 100, 10, 1][digits.count]
        }
        let (scaled, overflow) = whole.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return nil }
        let (total, overflowAdding) = scaled.addingReportingOverflow(fraction)
        return overflowAdding ? nil : total
    }
}

/// The stub HMAC secret, from a file or `SHOPLEDGER_STUB_SECRET`.
enum StubSecret {
    static func read(file: String?) throws -> String? {
        if let file {
            let secret = try SecretFile.read(file, what: "the stub secret")
            guard !secret.isEmpty else { throw ValidationError("\(file) is empty.") }
            return secret
        }
        return Environment.string("SHOPLEDGER_STUB_SECRET")
    }
}
