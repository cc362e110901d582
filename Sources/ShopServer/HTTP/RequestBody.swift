import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Reads request bodies within the configured size limit, as the endpoint's content type.
package struct RequestBody: Sendable {
    let limit: Int

    /// The body's bytes; over the limit it is a 413.
    func bytes(of request: Request) async throws -> ByteBuffer {
        try await request.body.collect(upTo: limit)
    }

    /// A form body (SeSAC surface). Clients send `application/x-www-form-urlencoded`; a body with no
    /// content type is read as a form too. Other types are input errors (501 there).
    func form(of request: Request) async throws -> FormFields {
        if let type = request.headers[.contentType], !Self.isMediaType(type, "application/x-www-form-urlencoded") {
            throw InputError.unsupportedMediaType("application/x-www-form-urlencoded")
        }
        let buffer = try await bytes(of: request)
        return try FormFields(parsing: buffer.readableBytesView)
    }

    /// A JSON body's text, unparsed (valid UTF-8; `Content-Type: application/json`, 415 otherwise).
    func jsonText(of request: Request) async throws -> String {
        guard let contentType = request.headers[.contentType], Self.isMediaType(contentType, "application/json") else {
            throw InputError.unsupportedMediaType("application/json")
        }
        let buffer = try await bytes(of: request)
        guard let text = String(validating: buffer.readableBytesView, as: UTF8.self) else {
            throw InputError("invalid_utf8", "the body is not valid UTF-8")
        }
        return text
    }

    /// A JSON body decoded as `T` (JSON surface). Needs `Content-Type: application/json` (415 otherwise);
    /// a body that is not valid JSON of that shape is a 400 naming the field.
    func json<T: Decodable>(_ type: T.Type, of request: Request) async throws -> T {
        try Self.decode(type, from: try await jsonBytes(of: request))
    }

    /// A JSON body's bytes, not yet parsed: `Content-Type: application/json` (415 otherwise), not empty.
    func jsonBytes(of request: Request) async throws -> ByteBuffer {
        guard let contentType = request.headers[.contentType], Self.isMediaType(contentType, "application/json") else {
            throw InputError.unsupportedMediaType("application/json")
        }
        let buffer = try await bytes(of: request)
        guard buffer.readableBytes > 0 else {
            throw InputError("empty_body", "the body is empty; a JSON object is expected")
        }
        return buffer
    }

    /// `buffer` decoded as `T`; a body that is not valid JSON of that shape is a 400 naming the field.
    package static func decode<T: Decodable>(_ type: T.Type, from buffer: ByteBuffer) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw InputError("invalid_json", Self.describe(error))
        }
    }

    /// Whether `value` (a `Content-Type`) names `expected` (`type/subtype`, lowercase ASCII): compared
    /// without case, without parameters such as `charset` and the spaces or tabs around them. Byte by
    /// byte, allocating nothing: every request with a body passes here.
    static func isMediaType(_ value: String, _ expected: StaticString) -> Bool {
        let bytes = value.utf8
        let end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex
        var start = bytes.startIndex
        var last = end
        func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        while start < last, isSpace(bytes[start]) { start = bytes.index(after: start) }
        while last > start, isSpace(bytes[bytes.index(before: last)]) { last = bytes.index(before: last) }
        let name = bytes[start..<last]
        return expected.withUTF8Buffer { wanted in
            name.count == wanted.count
                && zip(name, wanted).allSatisfy { byte, want in
                    (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte) == want
                }
        }
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
            return keys.isEmpty ? "the body" : keys.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, _): return "the field \(key.stringValue) is required"
        case .typeMismatch(let type, let context): return "\(path(context)) must be \(Self.name(type))"
        case .valueNotFound(let type, let context): return "\(path(context)) must be \(Self.name(type)), not null"
        case .dataCorrupted(let context) where context.codingPath.isEmpty: return "the body is not valid JSON"
        case .dataCorrupted(let context): return "\(path(context)) is not valid"
        @unknown default: return "the body does not have the expected shape"
        }
    }

    private static func name(_ type: Any.Type) -> String {
        switch type {
        case is Int.Type: "an integer"
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        default: "\(type)".lowercased()
        }
    }
}
