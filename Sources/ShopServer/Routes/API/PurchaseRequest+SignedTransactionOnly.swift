import NIOCore

extension APIBodies.PurchaseRequest {
    private static let prefix = Array(#"{"signedTransaction":""#.utf8)
    private static let suffix = Array(#""}"#.utf8)

    /// What the App Store apps send, exactly `{"signedTransaction":"<text>"}` with nothing to unescape in
    /// the text (no backslash, quote or control character) and valid UTF-8, read without `JSONDecoder`
    /// (a full JSON parse of the 5–7 KB JWS was about 3% of the server's CPU per purchase). Such a body
    /// decodes to the same value either way. Nil for any other body: the caller decodes it in full.
    package init?(signedTransactionOnly buffer: ByteBuffer) {
        let bytes = buffer.readableBytesView
        guard bytes.count >= Self.prefix.count + Self.suffix.count, bytes.starts(with: Self.prefix),
            bytes.reversed().starts(with: Self.suffix.reversed())
        else { return nil }
        let text = bytes.dropFirst(Self.prefix.count).dropLast(Self.suffix.count)
        guard !text.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }),
            let signedTransaction = String(validating: text, as: UTF8.self)
        else { return nil }
        self.init(signedTransaction: signedTransaction, receipt: nil, productId: nil)
    }
}
