import Foundation

/// A Swift value that can be bound as a query parameter.
public protocol PostgresEncodable: Sendable {
    /// The type OID sent with the value (0: let the server infer it from context).
    static var postgresTypeOID: UInt32 { get }
    var postgresBind: PostgresBind { get }
}

extension String: PostgresEncodable {
    // Unknown (0): the server types the literal from context, so a String binds to text, varchar,
    // jsonb, enum or timestamptz columns alike, as a literal in SQL would.
    public static var postgresTypeOID: UInt32 { PostgresType.unknown }
    public var postgresBind: PostgresBind { .text(self) }
}

extension Substring: PostgresEncodable {
    public static var postgresTypeOID: UInt32 { PostgresType.unknown }
    public var postgresBind: PostgresBind { .text(String(self)) }
}

extension Int: PostgresEncodable {
    public static var postgresTypeOID: UInt32 { PostgresType.int8 }
    public var postgresBind: PostgresBind { .text(String(self), oid: PostgresType.int8) }
}

extension Int64: PostgresEncodable {
    public static var postgresTypeOID: UInt32 { PostgresType.int8 }
    public var postgresBind: PostgresBind { .text(String(self), oid: PostgresType.int8) }
}

extension Int32: PostgresEncodable {
    public static var postgresTypeOID: UInt32 { PostgresType.int4 }
    public var postgresBind: PostgresBind { .text(String(self), oid: PostgresType.int4) }
}

extension Int16: PostgresEncodable {
    public static var postgresTypeOID: UInt32 { PostgresType.int2 }
    public var postgresBind: PostgresBind { .text(String(self), oid: PostgresType.int2) }
}

extension Bool: PostgresEncodable {
    public static var postgresTypeOID: UInt32 { PostgresType.bool }
    public var postgresBind: PostgresBind { .text(self ? "t" : "f", oid: PostgresType.bool) }
}

extension Double: PostgresEncodable {
    public static var postgresTypeOID: UInt32 { PostgresType.float8 }
    public var postgresBind: PostgresBind {
        let text: String
        if isNaN {
            text = "NaN"
        } else if isInfinite {
            text = self < 0 ? "-Infinity" : "Infinity"
        } else {
            text = "\(self)"
        }
        return .text(text, oid: PostgresType.float8)
    }
}

extension UUID: PostgresEncodable {
    public static var postgresTypeOID: UInt32 { PostgresType.uuid }
    public var postgresBind: PostgresBind { .text(uuidString.lowercased(), oid: PostgresType.uuid) }
}

extension Date: PostgresEncodable {
    public static var postgresTypeOID: UInt32 { PostgresType.timestamptz }
    public var postgresBind: PostgresBind { .text(PostgresTimestamp.format(self), oid: PostgresType.timestamptz) }
}

extension Data: PostgresEncodable {
    public static var postgresTypeOID: UInt32 { PostgresType.bytea }
    public var postgresBind: PostgresBind { PostgresBind(.binary([UInt8](self)), oid: PostgresType.bytea) }
}

/// JSON text bound and decoded as such (binds to `json` or `jsonb` columns).
public struct PostgresJSON: Sendable, Hashable, PostgresEncodable {
    public var text: String
    public init(_ text: String) { self.text = text }

    /// Encodes a value with `JSONEncoder` (sorted keys, so equal values give equal text).
    public init<Value: Encodable>(encoding value: Value) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        self.text = String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Decodes the JSON text with `JSONDecoder`.
    public func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }

    public static var postgresTypeOID: UInt32 { PostgresType.unknown }
    public var postgresBind: PostgresBind { .text(text) }
}

/// Element types that can be bound inside an array parameter.
public protocol PostgresArrayElement: PostgresEncodable {
    static var postgresArrayTypeOID: UInt32 { get }
    /// The element's text inside an array literal, quoted where needed.
    var postgresArrayLiteral: String { get }
}

extension Int: PostgresArrayElement {
    public static var postgresArrayTypeOID: UInt32 { PostgresType.int8Array }
    public var postgresArrayLiteral: String { String(self) }
}

extension Int64: PostgresArrayElement {
    public static var postgresArrayTypeOID: UInt32 { PostgresType.int8Array }
    public var postgresArrayLiteral: String { String(self) }
}

extension Int32: PostgresArrayElement {
    public static var postgresArrayTypeOID: UInt32 { PostgresType.int4Array }
    public var postgresArrayLiteral: String { String(self) }
}

extension Int16: PostgresArrayElement {
    public static var postgresArrayTypeOID: UInt32 { PostgresType.int2Array }
    public var postgresArrayLiteral: String { String(self) }
}

extension String: PostgresArrayElement {
    public static var postgresArrayTypeOID: UInt32 { PostgresType.textArray }
    public var postgresArrayLiteral: String {
        var quoted = "\""
        for scalar in unicodeScalars {
            if scalar == "\"" || scalar == "\\" { quoted += "\\" }
            quoted.unicodeScalars.append(scalar)
        }
        return quoted + "\""
    }
}

extension Array: PostgresEncodable where Element: PostgresArrayElement {
    public static var postgresTypeOID: UInt32 { Element.postgresArrayTypeOID }
    public var postgresBind: PostgresBind {
        .text("{" + map(\.postgresArrayLiteral).joined(separator: ",") + "}", oid: Element.postgresArrayTypeOID)
    }
}
