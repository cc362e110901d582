import Crypto
import Foundation
import NIOCore

/// The SeSAC user document, byte for byte as our server writes it (`UserDocument` and its hand-written
/// `JSONBody` response in Sources/ShopServer): same keys, order, values and escaping. LoadBench compares
/// the two bodies for several users before it times anything.
enum UserDocumentBody {
    /// The profile as the sign-up form stored it (ours: `UserDocument.StoredProfile`).
    private struct StoredProfile: Decodable {
        var phoneNumber: String?
        var FCMtoken: String?
        var nick: String?
        var birth: String?
        var email: String?
        var gender: Int?
    }

    static func write(uid: String, row: MyinfoStatement.Row) -> ByteBuffer {
        let (profileJSON, face, background, registeredAt, faces, backgrounds, transactionIds) = row
        let profile =
            (try? JSONDecoder().decode(StoredProfile.self, from: Data(profileJSON.utf8))) ?? StoredProfile()
        var body = JSONWriter(capacity: 512 + 24 * transactionIds.count)
        body.field("_id", documentId(uid))
        body.field("__v", 0)
        body.field("uid", uid)
        body.field("phoneNumber", profile.phoneNumber ?? "")
        body.field("email", profile.email ?? "")
        body.field("FCMtoken", profile.FCMtoken ?? "")
        body.field("nick", profile.nick ?? "")
        body.field("birth", profile.birth ?? "")
        body.field("gender", profile.gender ?? -1)
        body.field("study", "")
        body.field("comment", [String]())
        body.field("reputation", Array(repeating: 0, count: 9))
        body.field("sesac", face)
        body.field("sesacCollection", faces)
        body.field("background", background)
        body.field("backgroundCollection", backgrounds)
        body.field("purchaseToken", [String]())
        body.field("transactionId", transactionIds)
        body.field("reviewedBefore", [String]())
        body.field("reportedNum", 0)
        body.field("reportedUser", [String]())
        body.field("dodgepenalty", 0)
        body.field("dodgeNum", 0)
        body.field("ageMin", 18)
        body.field("ageMax", 65)
        body.field("searchable", 1)
        body.field("createdAt", timestamp(registeredAt.date))
        return body.close()
    }

    /// Ours: the first 12 bytes of the uid's SHA-256, in hex (the shape of a MongoDB ObjectId).
    static func documentId(_ uid: String) -> String {
        SHA256.hash(data: Array(uid.utf8)).prefix(12).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    static func timestamp(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt).format(date)
    }
}

/// A JSON object written straight into a `ByteBuffer`, as our `JSONBody`: strings escaped as RFC 8259
/// requires (quote, backslash, control characters), everything else written as UTF-8.
struct JSONWriter {
    private var buffer: ByteBuffer
    private var first = true

    init(capacity: Int) {
        buffer = ByteBufferAllocator().buffer(capacity: capacity)
        buffer.writeInteger(UInt8(ascii: "{"))
    }

    mutating func field(_ name: StaticString, _ value: String) {
        key(name)
        string(value)
    }

    mutating func field(_ name: StaticString, _ value: Int) {
        key(name)
        buffer.writeString(String(value))
    }

    mutating func field(_ name: StaticString, _ values: [Int]) {
        key(name)
        buffer.writeInteger(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { buffer.writeInteger(UInt8(ascii: ",")) }
            buffer.writeString(String(value))
        }
        buffer.writeInteger(UInt8(ascii: "]"))
    }

    mutating func field(_ name: StaticString, _ values: [String]) {
        key(name)
        buffer.writeInteger(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { buffer.writeInteger(UInt8(ascii: ",")) }
            string(value)
        }
        buffer.writeInteger(UInt8(ascii: "]"))
    }

    mutating func close() -> ByteBuffer {
        buffer.writeInteger(UInt8(ascii: "}"))
        return buffer
    }

    private mutating func key(_ name: StaticString) {
        if !first { buffer.writeInteger(UInt8(ascii: ",")) }
        first = false
        buffer.writeInteger(UInt8(ascii: "\""))
        buffer.writeStaticString(name)
        buffer.writeStaticString("\":")
    }

    private static let hex = Array("0123456789abcdef".utf8)

    private mutating func string(_ value: String) {
        buffer.writeInteger(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { bytes in
            var start = 0
            for (index, byte) in bytes.enumerated() where Self.needsEscape(byte) {
                buffer.writeBytes(UnsafeBufferPointer(rebasing: bytes[start..<index]))
                switch byte {
                case UInt8(ascii: "\""): buffer.writeStaticString("\\\"")
                case UInt8(ascii: "\\"): buffer.writeStaticString("\\\\")
                case UInt8(ascii: "\n"): buffer.writeStaticString("\\n")
                case UInt8(ascii: "\r"): buffer.writeStaticString("\\r")
                case UInt8(ascii: "\t"): buffer.writeStaticString("\\t")
                default:
                    buffer.writeStaticString("\\u00")
                    buffer.writeBytes([Self.hex[Int(byte >> 4)], Self.hex[Int(byte & 0xF)]])
                }
                start = index + 1
            }
            buffer.writeBytes(UnsafeBufferPointer(rebasing: bytes[start...]))
        }
        buffer.writeInteger(UInt8(ascii: "\""))
    }

    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }
}
