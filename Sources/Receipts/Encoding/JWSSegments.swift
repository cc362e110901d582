/// The three segments of a JWS in compact serialization (`header.payload.signature`, RFC 7515 §7.1),
/// located but not decoded: the one splitter of App Store JWS and Firebase ID tokens. Nothing here is
/// verified.
package struct JWSSegments {
    package enum Failure: Error, Sendable {
        /// Not exactly two dots.
        case notThreeSegments
        /// The header or the payload segment is empty (the signature may be, and then fails to verify).
        case emptySegment
    }

    package let header: ArraySlice<UInt8>
    package let payload: ArraySlice<UInt8>
    package let signature: ArraySlice<UInt8>
    /// ASCII of `header.payload`: what the signature covers.
    package let signingInput: ArraySlice<UInt8>

    package init(splitting bytes: ArraySlice<UInt8>) throws(Failure) {
        var dots: [Int] = []
        for index in bytes.indices where bytes[index] == UInt8(ascii: ".") {
            dots.append(index)
            if dots.count > 2 { break }
        }
        guard dots.count == 2 else { throw .notThreeSegments }
        header = bytes[bytes.startIndex..<dots[0]]
        payload = bytes[(dots[0] + 1)..<dots[1]]
        signature = bytes[(dots[1] + 1)...]
        guard !header.isEmpty, !payload.isEmpty else { throw .emptySegment }
        signingInput = bytes[bytes.startIndex..<dots[1]]
    }
}
