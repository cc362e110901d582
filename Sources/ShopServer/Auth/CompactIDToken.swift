import Foundation
import Receipts

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

        let segments: JWSSegments
        do {
            segments = try JWSSegments(splitting: bytes[...])
        } catch .notThreeSegments {
            throw AuthError(.malformedToken, "the token is not a JWS of three dot-separated segments")
        } catch {
            throw AuthError(.malformedToken, "the token's header or payload segment is empty")
        }
        func decode(_ segment: ArraySlice<UInt8>) -> [UInt8]? {
            Base64.decode(segment, alphabet: .url, padding: .forbidden, maxDecodedBytes: maxBytes)
        }
        guard let headerJSON = decode(segments.header), let payloadJSON = decode(segments.payload),
            let signature = decode(segments.signature)
        else { throw AuthError(.malformedToken, "a token segment is not unpadded base64url") }

        do {
            header = try JSONDecoder().decode(Header.self, from: Data(headerJSON))
        } catch {
            throw AuthError(.malformedToken, "the token header is not a JSON object of the expected shape")
        }
        self.signingInput = segments.signingInput
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
}
