import Hummingbird
import NIOCore

/// A JSON object written straight into a `ByteBuffer`, for the hot responses (the SeSAC user document).
/// `JSONEncoder` builds a tree of boxed values and sorts nothing we need; for `myinfo` it was a tenth of
/// the machine's CPU under load (docs/benchmarks.md). Strings are escaped as RFC 8259
/// requires (quote, backslash, control characters); everything else is written as UTF-8.
struct JSONBody {
    private(set) var buffer: ByteBuffer
    private var first = true

    init(capacity: Int = 1024) {
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

    mutating func field(_ name: StaticString, _ value: String?) {
        guard let value else { return null(name) }
        field(name, value)
    }

    mutating func field(_ name: StaticString, _ value: Int64) {
        key(name)
        buffer.writeString(String(value))
    }

    mutating func field(_ name: StaticString, _ value: Bool) {
        key(name)
        buffer.writeStaticString(value ? "true" : "false")
    }

    mutating func null(_ name: StaticString) {
        key(name)
        buffer.writeStaticString("null")
    }

    /// A nested object whose fields `write` adds.
    mutating func object(_ name: StaticString, _ write: (inout JSONBody) -> Void) {
        key(name)
        buffer.writeInteger(UInt8(ascii: "{"))
        first = true
        write(&self)
        buffer.writeInteger(UInt8(ascii: "}"))
        first = false
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

    /// The finished object.
    mutating func close() -> ByteBuffer {
        buffer.writeInteger(UInt8(ascii: "}"))
        return buffer
    }

    private mutating func key(_ name: StaticString) {
        if !first { buffer.writeInteger(UInt8(ascii: ",")) }
        first = false
        buffer.writeInteger(UInt8(ascii: "\""))
        buffer.writeStaticString(name)  // names are plain ASCII literals: nothing to escape
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

    /// A 200 (or `status`) response with this object as its body.
    mutating func response(status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: close())
        )
    }
}
