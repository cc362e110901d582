import Foundation

/// An ID token in JWS compact serialization (`header.payload.signature`), split and base64url-decoded
/// with a bounded size. Nothing here is verified: this is the shape check before verification. The
/// payload's JSON is only parsed (``decodePayload()``) once the signature has been checked.
struct CompactIDToken {
    struct Header: Decodable {
        var alg: String?
        var kid: String?
        /// Whether the header has a `crit` member: extensions we do not understand, so refused (RFC 7515 §4.1.11).
        var hasCritical: Bool

        enum CodingKeys: String, CodingKey { case alg, kid, crit }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            alg = try container.decodeIfPresent(String.self, forKey: .alg)
            kid = try container.decodeIfPresent(String.self, forKey: .kid)
            hasCritical = container.contains(.crit)
        }
    }

    let header: Header
    /// ASCII of `header.payload`: what the signature covers.
    let signingInput: ArraySlice<UInt8>
    let payloadJSON: [UInt8]
    let signature: [UInt8]

    init(parsing token: String, maxBytes: Int) throws(AuthError) {
        // Bound the work before copying or decoding anything (`utf8.count` is O(1) for native strings).
        guard token.utf8.count <= maxBytes else {
            throw AuthError(.malformedToken, "the token is over the \(maxBytes)-byte limit")
        }
        let bytes = Array(token.utf8)
        guard !bytes.isEmpty else { throw AuthError(.missingToken, "the token is empty") }

        var dots: [Int] = []
        for index in bytes.indices where bytes[index] == UInt8(ascii: ".") {
            dots.append(index)
            if dots.count > 2 { break }
        }
        guard dots.count == 2 else {
            throw AuthError(.malformedToken, "the token is not a JWS of three dot-separated segments")
        }
        let headerSegment = bytes[..<dots[0]]
        let payloadSegment = bytes[(dots[0] + 1)..<dots[1]]
        let signatureSegment = bytes[(dots[1] + 1)...]
        guard !headerSegment.isEmpty, !payloadSegment.isEmpty else {
            throw AuthError(.malformedToken, "the token's header or payload segment is empty")
        }
        guard let headerJSON = Self.decodeBase64URL(headerSegment),
            let payloadJSON = Self.decodeBase64URL(payloadSegment),
            let signature = Self.decodeBase64URL(signatureSegment)
        else { throw AuthError(.malformedToken, "a token segment is not unpadded base64url") }

        do {
            header = try JSONDecoder().decode(Header.self, from: Data(headerJSON))
        } catch {
            throw AuthError(.malformedToken, "the token header is not a JSON object of the expected shape")
        }
        self.signingInput = bytes[..<dots[1]]
        self.payloadJSON = payloadJSON
        self.signature = signature
    }

    /// The payload's claims, as sent. Call only after the signature has been verified.
    func decodePayload() throws(AuthError) -> IDTokenClaims.Payload {
        do {
            return try JSONDecoder().decode(IDTokenClaims.Payload.self, from: Data(payloadJSON))
        } catch {
            throw AuthError(.malformedToken, "the token payload is not a JSON object of the expected shape")
        }
    }

    /// Strict base64url without padding (RFC 7515 §2): only `A–Z a–z 0–9 - _`, no `=`, no whitespace,
    /// and unused trailing bits zero, so every byte string has exactly one accepted encoding.
    static func decodeBase64URL(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        guard text.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(text.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in text {
            let value: UInt8
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = character - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = character - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            default: return nil
            }
            accumulator = (accumulator << 6) | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        guard accumulator == 0 else { return nil }  // non-zero leftover bits: not canonical
        return output
    }
}
