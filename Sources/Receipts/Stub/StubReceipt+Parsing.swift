import Foundation

extension StubReceipt {
    static let maxEntries = 100

    /// Parses stub receipt text (see ``StubReceipt``), strictly: unknown keys, repeated keys, missing required
    /// keys, bad numbers and non-ASCII values are `malformed`. Returns the receipt and the raw signature
    /// bytes of its `signature:` line, if any. Checks nothing beyond the format.
    static func parse(
        _ text: String, maxBytes: Int
    ) throws(ReceiptRefusal) -> (
        receipt: StubReceipt, signature: [UInt8]?
    ) {
        var lines = try StubText.lines(text, magicLine: magicLine, maxBytes: maxBytes, what: "stub receipt")
            .makeIterator()

        var top: [String: String] = [:]
        var entries: [[String: String]] = []
        var signature: [UInt8]?
        var inList = false
        while let line = lines.next() {
            guard signature == nil else { throw ReceiptRefusal(.malformed, "the signature line must be the last line") }
            if line == "in_app:" {
                guard !inList else { throw ReceiptRefusal(.malformed, "in_app: appears twice") }
                inList = true
                continue
            }
            var body = Substring(line)
            let startsEntry = body.hasPrefix("- ")
            if startsEntry { body = body.dropFirst(2) }
            let (key, value) = try StubText.keyValue(body, what: "stub receipt")
            if key == "signature", !startsEntry {
                signature = try StubText.signature(value)
            } else if !inList {
                guard !startsEntry, ["bundle_id", "environment", "receipt_creation_date_ms"].contains(key) else {
                    throw ReceiptRefusal(.malformed, "unexpected key \(key.prefix(40)) before in_app:")
                }
                guard top.updateValue(value, forKey: key) == nil else {
                    throw ReceiptRefusal(.malformed, "\(key) appears twice")
                }
            } else {
                if startsEntry {
                    guard entries.count < maxEntries else {
                        throw ReceiptRefusal(.malformed, "stub receipt has over \(maxEntries) in_app entries")
                    }
                    entries.append([:])
                }
                guard !entries.isEmpty else { throw ReceiptRefusal(.malformed, "in_app entries start with '- '") }
                guard entryKeys.contains(key) else {
                    throw ReceiptRefusal(.malformed, "unknown in_app key \(key.prefix(40))")
                }
                guard entries[entries.count - 1].updateValue(value, forKey: key) == nil else {
                    throw ReceiptRefusal(.malformed, "\(key) appears twice in one in_app entry")
                }
            }
        }

        guard let bundleId = top["bundle_id"], let environment = top["environment"],
            let created = top["receipt_creation_date_ms"]
        else {
            throw ReceiptRefusal(.malformed, "stub receipt needs bundle_id, environment and receipt_creation_date_ms")
        }
        guard inList, !entries.isEmpty else { throw ReceiptRefusal(.malformed, "stub receipt has no in_app entries") }
        let receipt = StubReceipt(
            bundleId: bundleId,
            environment: StoreEnvironment(rawValue: environment),
            creationDateMs: try StubText.milliseconds(created, "receipt_creation_date_ms"),
            inApp: try entries.map { fields throws(ReceiptRefusal) in try entry(fields) })
        return (receipt, signature)
    }

    private static let entryKeys: Set<String> = [
        "product_id", "transaction_id", "original_transaction_id", "purchase_date_ms", "original_purchase_date_ms",
        "type", "in_app_ownership_type", "price", "currency", "app_account_token",
    ]

    private static func entry(_ fields: [String: String]) throws(ReceiptRefusal) -> InAppEntry {
        guard let productId = fields["product_id"], let transactionId = fields["transaction_id"],
            let purchased = fields["purchase_date_ms"]
        else {
            throw ReceiptRefusal(.malformed, "each in_app entry needs product_id, transaction_id and purchase_date_ms")
        }
        let price = try fields["price"].map { text throws(ReceiptRefusal) in
            guard let value = Int64(text), value >= 0 else {
                throw ReceiptRefusal(.malformed, "price must be a whole number of milliunits ≥ 0")
            }
            return value
        }
        let currency = fields["currency"]
        guard (price == nil) == (currency == nil) else {
            throw ReceiptRefusal(.malformed, "price and currency go together")
        }
        if let currency, currency.utf8.count != 3 || !currency.utf8.allSatisfy({ (0x41...0x5A).contains($0) }) {
            throw ReceiptRefusal(.malformed, "currency must be three capital letters (ISO 4217)")
        }
        var token: UUID?
        if let text = fields["app_account_token"] {
            guard let uuid = UUID(uuidString: text) else {
                throw ReceiptRefusal(.malformed, "app_account_token must be a UUID")
            }
            token = uuid
        }
        let purchaseDateMs = try StubText.milliseconds(purchased, "purchase_date_ms")
        return InAppEntry(
            productId: productId,
            transactionId: transactionId,
            originalTransactionId: fields["original_transaction_id"],
            purchaseDateMs: purchaseDateMs,
            originalPurchaseDateMs: try fields["original_purchase_date_ms"].map { text throws(ReceiptRefusal) in
                try StubText.milliseconds(text, "original_purchase_date_ms")
            },
            productType: fields["type"].map(ProductType.init(rawValue:)) ?? .nonConsumable,
            ownershipType: fields["in_app_ownership_type"].map(OwnershipType.init(rawValue:)) ?? .purchased,
            priceMilli: price,
            currency: currency,
            appAccountToken: token)
    }
}
