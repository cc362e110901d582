import Foundation
import SwiftASN1

extension AppReceipt {
    /// Receipt and in-app field types ShopLedger reads. Apple adds types; unknown ones are skipped.
    enum FieldType {
        static let receiptType = 0
        static let bundleId = 2
        static let appVersion = 3
        static let creationDate = 12
        static let inAppPurchase = 17
        static let quantity = 1701
        static let productId = 1702
        static let transactionId = 1703
        static let purchaseDate = 1704
        static let originalTransactionId = 1705
        static let originalPurchaseDate = 1706
        static let subscriptionExpirationDate = 1708
        static let cancellationDate = 1712
    }

    /// Parses the signed content of a classic receipt: a DER `SET OF ReceiptAttribute`, where
    /// `ReceiptAttribute ::= SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }` and each value
    /// is the DER encoding of the field's own type. Verifies nothing: ``AppReceiptVerifier`` calls this on
    /// the content of a receipt before and independently of checking its signature.
    ///
    /// - Throws: `malformed_receipt` when the content is not such a set, a field ShopLedger reads has the
    ///   wrong type, or the receipt type, bundle id or creation date is missing.
    public static func parsePayload(_ bytes: ArraySlice<UInt8>) throws(ReceiptRefusal) -> AppReceipt {
        var receiptType: String?
        var bundleId: String?
        var appVersion = ""
        var creationDate: Date?
        var purchases: [Purchase] = []
        try forEachAttribute(in: bytes, what: "receipt") { type, value throws(ReceiptRefusal) in
            switch type {
            case FieldType.receiptType: receiptType = try string(value, field: type)
            case FieldType.bundleId: bundleId = try string(value, field: type)
            case FieldType.appVersion: appVersion = try string(value, field: type)
            case FieldType.creationDate: creationDate = try date(value, field: type)
            case FieldType.inAppPurchase: purchases.append(try Purchase(parsing: value, index: purchases.count))
            default: break
            }
        }
        guard let receiptType, !receiptType.isEmpty else {
            throw malformed("the receipt has no receipt type (field 0)")
        }
        guard let bundleId, !bundleId.isEmpty else { throw malformed("the receipt has no bundle id (field 2)") }
        guard let creationDate else { throw malformed("the receipt has no creation date (field 12)") }
        return AppReceipt(
            receiptType: receiptType, bundleId: bundleId, appVersion: appVersion, creationDate: creationDate,
            purchases: purchases)
    }

    /// Calls `body` with each attribute's type and value bytes, in order.
    static func forEachAttribute(
        in bytes: ArraySlice<UInt8>, what: String,
        _ body: (Int, ArraySlice<UInt8>) throws(ReceiptRefusal) -> Void
    ) throws(ReceiptRefusal) {
        let attributes: [(Int, ArraySlice<UInt8>)]
        do {
            let root = try DER.parse(bytes)
            guard root.identifier == .set, case .constructed(let children) = root.content else {
                throw malformed("the \(what) content is not a SET of attributes")
            }
            attributes = try children.map { node in
                try DER.sequence(node, identifier: .sequence) { nodes in
                    let type = try Int(derEncoded: &nodes)
                    _ = try Int(derEncoded: &nodes)
                    let value = try ASN1OctetString(derEncoded: &nodes)
                    return (type, value.bytes)
                }
            }
        } catch let refusal as ReceiptRefusal {
            throw refusal
        } catch {
            throw malformed("the \(what) content is not a DER SET of (type, version, value) attributes: \(error)")
        }
        for (type, value) in attributes { try body(type, value) }
    }

    /// A UTF8String (or IA5String) field value.
    static func string(_ value: ArraySlice<UInt8>, field: Int) throws(ReceiptRefusal) -> String {
        guard let node = try? DER.parse(value), node.identifier == .utf8String || node.identifier == .ia5String,
            case .primitive(let content) = node.content, let text = String(validating: content, as: UTF8.self)
        else { throw malformed("field \(field) is not a UTF8String or IA5String") }
        return text
    }

    /// An INTEGER field value that fits an `Int`.
    static func integer(_ value: ArraySlice<UInt8>, field: Int) throws(ReceiptRefusal) -> Int {
        guard let node = try? DER.parse(value), let integer = try? Int(derEncoded: node) else {
            throw malformed("field \(field) is not an INTEGER")
        }
        return integer
    }

    /// An IA5String RFC 3339 date; nil for the empty string Apple writes when the date is not set.
    static func date(_ value: ArraySlice<UInt8>, field: Int) throws(ReceiptRefusal) -> Date? {
        guard let node = try? DER.parse(value), node.identifier == .ia5String || node.identifier == .utf8String,
            case .primitive(let content) = node.content
        else { throw malformed("field \(field) is not an IA5String date") }
        if content.isEmpty { return nil }
        guard let date = ReceiptDate.parse(content) else { throw malformed("field \(field) is not an RFC 3339 date") }
        return date
    }

    static func malformed(_ message: String) -> ReceiptRefusal { ReceiptRefusal(.malformedReceipt, message) }
}

extension AppReceipt.Purchase {
    /// Parses the value of a receipt field 17: a DER SET of in-app attributes.
    init(parsing value: ArraySlice<UInt8>, index: Int) throws(ReceiptRefusal) {
        typealias Field = AppReceipt.FieldType
        var quantity = 1
        var productId: String?
        var transactionId: String?
        var originalTransactionId: String?
        var purchaseDate: Date?
        var originalPurchaseDate: Date?
        var subscriptionExpirationDate: Date?
        var cancellationDate: Date?
        let what = "in-app purchase #\(index + 1)"
        do throws(ReceiptRefusal) {
            try AppReceipt.forEachAttribute(in: value, what: what) { type, value throws(ReceiptRefusal) in
                switch type {
                case Field.quantity: quantity = try AppReceipt.integer(value, field: type)
                case Field.productId: productId = try AppReceipt.string(value, field: type)
                case Field.transactionId: transactionId = try AppReceipt.string(value, field: type)
                case Field.originalTransactionId: originalTransactionId = try AppReceipt.string(value, field: type)
                case Field.purchaseDate: purchaseDate = try AppReceipt.date(value, field: type)
                case Field.originalPurchaseDate: originalPurchaseDate = try AppReceipt.date(value, field: type)
                case Field.subscriptionExpirationDate:
                    subscriptionExpirationDate = try AppReceipt.date(value, field: type)
                case Field.cancellationDate: cancellationDate = try AppReceipt.date(value, field: type)
                default: break
                }
            }
        } catch {
            throw ReceiptRefusal(.malformedReceipt, "\(what): \(error.message)")
        }
        guard let productId, !productId.isEmpty else { throw AppReceipt.malformed("\(what) has no product id") }
        guard let transactionId, !transactionId.isEmpty else {
            throw AppReceipt.malformed("\(what) has no transaction id")
        }
        guard let purchaseDate else { throw AppReceipt.malformed("\(what) has no purchase date") }
        self.init(
            quantity: quantity, productId: productId, transactionId: transactionId,
            originalTransactionId: originalTransactionId.flatMap { $0.isEmpty ? nil : $0 } ?? transactionId,
            purchaseDate: purchaseDate, originalPurchaseDate: originalPurchaseDate ?? purchaseDate,
            subscriptionExpirationDate: subscriptionExpirationDate, cancellationDate: cancellationDate)
    }
}
