/// Strict RFC 4648 base64 and base64url decoding: the one decoder of App Store JWS, classic receipts,
/// X.509 `x5c` entries and Firebase ID tokens.
///
/// Characters outside the alphabet (including whitespace), impossible lengths and non-zero trailing
/// bits are refused, so every accepted string has exactly one decoding and no input is silently
/// altered. Padding is optional unless the caller forbids it. The decoded size is computed and bounded
/// before anything is allocated.
package enum Base64 {
    package enum Alphabet: Sendable {
        /// `A–Z a–z 0–9 + /` (X.509 `x5c` entries, classic receipts).
        case standard
        /// `A–Z a–z 0–9 - _` (JWS segments).
        case url
    }

    package enum Padding: Sendable {
        /// `=` padding may end the input (App Store JWS segments, certificates, receipts).
        case optional
        /// No `=` at all (RFC 7515 §2 for JWS; Firebase ID tokens are held to it).
        case forbidden
    }

    private static let invalid: UInt8 = 0xFF
    private static let standardTable = table("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    private static let urlTable = table("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

    private static func table(_ alphabet: String) -> [UInt8] {
        var table = [UInt8](repeating: invalid, count: 256)
        for (value, character) in alphabet.utf8.enumerated() { table[Int(character)] = UInt8(value) }
        return table
    }

    /// The decoded length of `count` unpadded base64 characters, or nil when no input has that length.
    package static func decodedLength(ofUnpadded count: Int) -> Int? {
        switch count % 4 {
        case 0: count / 4 * 3
        case 2: count / 4 * 3 + 1
        case 3: count / 4 * 3 + 2
        default: nil
        }
    }

    /// Decodes `input`, or returns nil when it is not strict base64 of at most `maxDecodedBytes` bytes.
    package static func decode(
        _ input: ArraySlice<UInt8>, alphabet: Alphabet, padding allowed: Padding = .optional, maxDecodedBytes: Int
    ) -> [UInt8]? {
        var end = input.endIndex
        var padding = 0
        while allowed == .optional, end > input.startIndex, input[end - 1] == UInt8(ascii: "="), padding < 2 {
            end -= 1
            padding += 1
        }
        let count = end - input.startIndex
        if padding > 0, (count + padding) % 4 != 0 { return nil }
        guard let outputLength = decodedLength(ofUnpadded: count), outputLength <= maxDecodedBytes else { return nil }

        let table = alphabet == .standard ? standardTable : urlTable
        var output = [UInt8]()
        output.reserveCapacity(outputLength)
        var accumulator: UInt32 = 0
        var bits = 0
        var index = input.startIndex
        while index < end {
            let value = table[Int(input[index])]
            guard value != invalid else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
            index += 1
        }
        // Leftover bits of the last character must be zero (canonical encoding only).
        guard accumulator == 0 else { return nil }
        return output
    }

    package static func decode(
        _ text: String, alphabet: Alphabet, padding: Padding = .optional, maxDecodedBytes: Int
    ) -> [UInt8]? {
        decode(Array(text.utf8)[...], alphabet: alphabet, padding: padding, maxDecodedBytes: maxDecodedBytes)
    }
}
