/// What the SeSAC `receipt` form field holds. Classification looks at the shape only and verifies nothing.
public enum ReceiptField: Sendable, Hashable {
    /// A ShopLedger stub receipt (first line `shopledger-stub-receipt/1`).
    case stubReceipt
    /// A StoreKit 2 signed transaction: three base64url segments, the first a JSON object.
    case signedTransaction
    /// A classic app receipt: base64 of a PKCS#7 `signedData` structure.
    case appReceipt
    /// None of the above.
    case unrecognised

    /// Classifies `receipt`. Reads at most the first few dozen bytes for the app receipt check, so the cost does
    /// not grow with a large classic receipt.
    public init(classifying receipt: String) {
        let bytes = Array(receipt.utf8).trimmingASCIIWhitespace()
        if bytes.starts(with: StubReceipt.magicLine.utf8) {
            self = .stubReceipt
        } else if Self.looksLikeJWS(bytes) {
            self = .signedTransaction
        } else if Self.looksLikePKCS7(bytes) {
            self = .appReceipt
        } else {
            self = .unrecognised
        }
    }

    private static func looksLikeJWS(_ bytes: ArraySlice<UInt8>) -> Bool {
        // base64url of `{"` is `eyJ`; segments are base64url, separated by exactly two dots.
        guard bytes.starts(with: "eyJ".utf8) else { return false }
        var dots = 0
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "."): dots += 1
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "="):
                continue
            default: return false
            }
        }
        return dots == 2
    }

    /// DER/BER `SEQUENCE { OID 1.2.840.113549.1.7.2 (pkcs7-signedData), ... }` at the start of the base64.
    private static func looksLikePKCS7(_ bytes: ArraySlice<UInt8>) -> Bool {
        // Form bodies sometimes turn `+` into a space and carry line breaks; undo both for the prefix.
        var prefix: [UInt8] = []
        for byte in bytes where prefix.count < 32 {
            switch byte {
            case 0x0A, 0x0D: continue
            case 0x20: prefix.append(UInt8(ascii: "+"))
            default: prefix.append(byte)
            }
        }
        guard prefix.count == 32, let head = Base64.decode(prefix[...], alphabet: .standard, maxDecodedBytes: 24),
            head.count == 24, head[0] == 0x30
        else { return false }
        // Length octets (counting the first): 0x80 (indefinite, BER), short form, or long form 0x81...0x84.
        let lengthOctets: Int
        switch head[1] {
        case 0x00...0x80: lengthOctets = 1
        case 0x81...0x84: lengthOctets = 1 + Int(head[1] - 0x80)
        default: return false
        }
        let signedDataOID: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]
        return head[(1 + lengthOctets)...].starts(with: signedDataOID)
    }
}
