import Foundation

/// A JWS in compact serialization (`header.payload.signature`), split and base64url-decoded with bounded
/// sizes. Nothing here is verified: this is the shape check before verification.
struct CompactJWS {
    struct Header: Decodable, Sendable {
        var alg: String?
        var x5c: [String]?
        var crit: [String]?
    }

    /// App Store headers carry three certificates, about 5 KiB of base64url in all.
    static let maxHeaderSegmentBytes = 8 * 1024

    /// The exact compact string, without surrounding whitespace: the evidence that gets hashed.
    let compact: String
    let header: Header
    let headerJSON: [UInt8]
    let payloadJSON: [UInt8]
    /// ASCII of `header.payload`: what the signature covers.
    let signingInput: ArraySlice<UInt8>
    let signatureSegment: ArraySlice<UInt8>

    /// With a `headerCache`, a header segment seen before is not decoded again: the cache returns what
    /// decoding it gave, so the result (and any refusal) is the same.
    init(parsing input: String, maxInputBytes: Int, headerCache: JWSHeaderCache? = nil) throws(ReceiptRefusal) {
        // Bound the work before copying or decoding anything.
        guard input.utf8.count <= maxInputBytes else {
            throw ReceiptRefusal(
                .malformed, "signed data is \(input.utf8.count) bytes, over the \(maxInputBytes)-byte limit")
        }
        let bytes = Array(input.utf8).trimmingASCIIWhitespace()
        guard !bytes.isEmpty else { throw ReceiptRefusal(.malformed, "signed data is empty") }

        let segments: JWSSegments
        do {
            segments = try JWSSegments(splitting: bytes)
        } catch .notThreeSegments {
            throw ReceiptRefusal(.malformed, "a JWS has three dot-separated segments")
        } catch {
            throw ReceiptRefusal(.malformed, "JWS header or payload segment is empty")
        }
        let headerSegment = segments.header
        let payloadSegment = segments.payload
        guard headerSegment.count <= Self.maxHeaderSegmentBytes else {
            throw ReceiptRefusal(.malformed, "JWS header is over \(Self.maxHeaderSegmentBytes) bytes")
        }
        let cached = headerCache?.parsed(headerSegment)
        guard
            let headerJSON = cached?.json
                ?? Base64.decode(headerSegment, alphabet: .url, maxDecodedBytes: Self.maxHeaderSegmentBytes)
        else { throw ReceiptRefusal(.malformed, "JWS header is not base64url") }
        guard let payloadJSON = Base64.decode(payloadSegment, alphabet: .url, maxDecodedBytes: maxInputBytes)
        else { throw ReceiptRefusal(.malformed, "JWS payload is not base64url") }

        let header: Header
        if let cached {
            header = cached.header
        } else {
            do {
                header = try JSONDecoder().decode(Header.self, from: Data(headerJSON))
            } catch {
                throw ReceiptRefusal(.malformed, "JWS header is not a JSON object of the expected shape")
            }
            headerCache?.remember(JWSHeaderCache.Parsed(header: header, json: headerJSON), for: headerSegment)
        }

        self.compact = String(decoding: bytes, as: UTF8.self)
        self.header = header
        self.headerJSON = headerJSON
        self.payloadJSON = payloadJSON
        self.signingInput = segments.signingInput
        self.signatureSegment = segments.signature
    }

    /// Decodes the payload JSON into `type`, refusing as `malformed` when it does not fit.
    func decodePayload<T: Decodable>(as type: T.Type) throws(ReceiptRefusal) -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        do {
            return try decoder.decode(type, from: Data(payloadJSON))
        } catch {
            throw ReceiptRefusal(.malformed, "JWS payload is not JSON of the expected shape")
        }
    }
}

extension Array where Element == UInt8 {
    /// The slice without leading and trailing spaces, tabs, CR and LF.
    func trimmingASCIIWhitespace() -> ArraySlice<UInt8> {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        var start = startIndex
        var end = endIndex
        while start < end, isSpace(self[start]) { start += 1 }
        while end > start, isSpace(self[end - 1]) { end -= 1 }
        return self[start..<end]
    }
}
