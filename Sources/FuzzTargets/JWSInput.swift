import Foundation

/// How the JWS targets (signed transactions, notifications, Firebase ID tokens) read a corpus file:
/// `header JSON` LF `payload JSON` LF `signature bytes`, so that mutations land in the JSON rather than in
/// its base64url. The harness encodes the three parts as unpadded base64url and joins them with dots, which
/// gives back the exact compact text a seed was made from (its signature still verifies). A file without
/// two line feeds is taken as the compact text itself.
public enum JWSInput {
    /// The compact JWS a corpus file stands for.
    public static func compact(_ bytes: [UInt8]) -> String {
        let parts = bytes.split(separator: 0x0A, maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return String(decoding: bytes, as: UTF8.self) }
        return parts.map(base64URL).joined(separator: ".")
    }

    /// The corpus file for the compact JWS `text` (its three segments decoded), or nil when a segment is not
    /// unpadded base64url or the header or payload holds a line feed.
    public static func file(compact text: String) -> [UInt8]? {
        let segments = text.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3 else { return nil }
        var decoded: [[UInt8]] = []
        for segment in segments {
            guard !segment.contains("="), let bytes = decodeBase64URL(segment), base64URL(bytes[...]) == segment
            else { return nil }
            decoded.append(bytes)
        }
        guard !decoded[0].contains(0x0A), !decoded[1].contains(0x0A) else { return nil }
        return decoded[0] + [0x0A] + decoded[1] + [0x0A] + decoded[2]
    }

    static func base64URL(_ bytes: ArraySlice<UInt8>) -> String {
        var text = Array(Data(bytes).base64EncodedData())
        for index in text.indices {
            switch text[index] {
            case UInt8(ascii: "+"): text[index] = UInt8(ascii: "-")
            case UInt8(ascii: "/"): text[index] = UInt8(ascii: "_")
            default: break
            }
        }
        while text.last == UInt8(ascii: "=") { text.removeLast() }
        return String(decoding: text, as: UTF8.self)
    }

    static func decodeBase64URL(_ segment: Substring) -> [UInt8]? {
        var text = segment.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.utf8.count % 4) % 4)
        return Data(base64Encoded: text).map(Array.init)
    }
}
