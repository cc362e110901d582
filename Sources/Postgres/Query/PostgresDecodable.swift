import Foundation

/// A Swift type that a result cell decodes into. Decoding checks the column's type: reading an
/// `int4` as `String` or a `text` as `Int` is a clear error, not a silent conversion.
public protocol PostgresDecodable: Sendable {
    static func decode(from cell: PostgresCell) throws -> Self
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws -> Wrapped? {
        cell.bytes == nil ? nil : try Wrapped.decode(from: cell)
    }
}

/// Parses an ASCII integer (optionally signed); `allowIntegralDecimal` accepts `12.000` (numeric).
private func parseInteger(_ bytes: ArraySlice<UInt8>, allowIntegralDecimal: Bool) -> Int64? {
    var index = bytes.startIndex
    guard index < bytes.endIndex else { return nil }
    let negative = bytes[index] == UInt8(ascii: "-")
    if negative || bytes[index] == UInt8(ascii: "+") { index += 1 }
    guard index < bytes.endIndex else { return nil }
    var value: Int64 = 0
    while index < bytes.endIndex {
        let byte = bytes[index]
        if byte == UInt8(ascii: "."), allowIntegralDecimal {
            guard bytes[(index + 1)...].allSatisfy({ $0 == UInt8(ascii: "0") }) else { return nil }
            break
        }
        guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
        let digit = Int64(byte - UInt8(ascii: "0"))
        let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
        let (next, overflow2) =
            negative ? times10.subtractingReportingOverflow(digit) : times10.addingReportingOverflow(digit)
        guard !overflow1, !overflow2 else { return nil }
        value = next
        index += 1
    }
    return value
}

private let integerTypes: Set<UInt32> = [PostgresType.int2, PostgresType.int4, PostgresType.int8, PostgresType.oid]

private func decodeInteger<T: FixedWidthInteger>(_ type: T.Type, from cell: PostgresCell) throws -> T {
    let bytes = try cell.require(T.self)
    // numeric is accepted when integral: sum(bigint) and count-like aggregates return it.
    guard integerTypes.contains(cell.typeOID) || cell.typeOID == PostgresType.numeric else {
        throw cell.mismatch(T.self)
    }
    guard let wide = parseInteger(bytes, allowIntegralDecimal: cell.typeOID == PostgresType.numeric),
        let value = T(exactly: wide)
    else { throw cell.invalid(T.self) }
    return value
}

extension Int: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws -> Int { try decodeInteger(Int.self, from: cell) }
}

extension Int64: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws -> Int64 { try decodeInteger(Int64.self, from: cell) }
}

extension Int32: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws -> Int32 { try decodeInteger(Int32.self, from: cell) }
}

extension Int16: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws -> Int16 { try decodeInteger(Int16.self, from: cell) }
}

extension Bool: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws -> Bool {
        let bytes = try cell.require(Bool.self)
        guard cell.typeOID == PostgresType.bool else { throw cell.mismatch(Bool.self) }
        switch bytes.first {
        case UInt8(ascii: "t"): return true
        case UInt8(ascii: "f"): return false
        default: throw cell.invalid(Bool.self)
        }
    }
}

private let textTypes: Set<UInt32> = [
    PostgresType.text, PostgresType.varchar, PostgresType.bpchar, PostgresType.name, PostgresType.unknownLiteral,
    PostgresType.json, PostgresType.jsonb,
]

extension String: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws -> String {
        let bytes = try cell.require(String.self)
        guard textTypes.contains(cell.typeOID) else { throw cell.mismatch(String.self) }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Double: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws -> Double {
        let bytes = try cell.require(Double.self)
        let accepted = integerTypes.union([PostgresType.float4, PostgresType.float8, PostgresType.numeric])
        guard accepted.contains(cell.typeOID) else { throw cell.mismatch(Double.self) }
        guard let value = Double(String(decoding: bytes, as: UTF8.self)) else { throw cell.invalid(Double.self) }
        return value
    }
}

extension Date: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws -> Date {
        let bytes = try cell.require(Date.self)
        guard [PostgresType.timestamptz, PostgresType.timestamp, PostgresType.date].contains(cell.typeOID) else {
            throw cell.mismatch(Date.self)
        }
        guard let date = PostgresTimestamp.parse(bytes) else { throw cell.invalid(Date.self) }
        return date
    }
}

extension UUID: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws -> UUID {
        let bytes = try cell.require(UUID.self)
        guard cell.typeOID == PostgresType.uuid else { throw cell.mismatch(UUID.self) }
        guard let uuid = UUID(uuidString: String(decoding: bytes, as: UTF8.self)) else { throw cell.invalid(UUID.self) }
        return uuid
    }
}

extension Data: PostgresDecodable {
    /// `bytea` arrives in text format as `\x` followed by hex digits (bytea_output = hex, pinned).
    public static func decode(from cell: PostgresCell) throws -> Data {
        let bytes = try cell.require(Data.self)
        guard cell.typeOID == PostgresType.bytea else { throw cell.mismatch(Data.self) }
        guard bytes.count >= 2, bytes.first == UInt8(ascii: "\\"), bytes[bytes.startIndex + 1] == UInt8(ascii: "x"),
            bytes.count % 2 == 0
        else { throw cell.invalid(Data.self) }
        var data = Data(capacity: (bytes.count - 2) / 2)
        var index = bytes.startIndex + 2
        while index < bytes.endIndex {
            guard let high = hexValue(bytes[index]), let low = hexValue(bytes[index + 1]) else {
                throw cell.invalid(Data.self)
            }
            data.append(high << 4 | low)
            index += 2
        }
        return data
    }
}

private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}

extension PostgresJSON: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws -> PostgresJSON {
        let bytes = try cell.require(PostgresJSON.self)
        guard cell.typeOID == PostgresType.json || cell.typeOID == PostgresType.jsonb else {
            throw cell.mismatch(PostgresJSON.self)
        }
        return PostgresJSON(String(decoding: bytes, as: UTF8.self))
    }
}

/// Element types an array column decodes into.
public protocol PostgresArrayDecodable: PostgresDecodable {
    static var acceptedArrayTypeOIDs: Set<UInt32> { get }
    static var elementTypeOID: UInt32 { get }
}

// Built once: a set literal in the getters below would be built (and hashed) on every array decoded.
private let int8ArrayTypes: Set<UInt32> = [PostgresType.int2Array, PostgresType.int4Array, PostgresType.int8Array]
private let int4ArrayTypes: Set<UInt32> = [PostgresType.int2Array, PostgresType.int4Array]
private let int2ArrayTypes: Set<UInt32> = [PostgresType.int2Array]
private let textArrayTypes: Set<UInt32> = [PostgresType.textArray, PostgresType.varcharArray]

extension Int: PostgresArrayDecodable {
    public static var acceptedArrayTypeOIDs: Set<UInt32> { int8ArrayTypes }
    public static var elementTypeOID: UInt32 { PostgresType.int8 }
}

extension Int64: PostgresArrayDecodable {
    public static var acceptedArrayTypeOIDs: Set<UInt32> { int8ArrayTypes }
    public static var elementTypeOID: UInt32 { PostgresType.int8 }
}

extension Int32: PostgresArrayDecodable {
    public static var acceptedArrayTypeOIDs: Set<UInt32> { int4ArrayTypes }
    public static var elementTypeOID: UInt32 { PostgresType.int4 }
}

extension Int16: PostgresArrayDecodable {
    public static var acceptedArrayTypeOIDs: Set<UInt32> { int2ArrayTypes }
    public static var elementTypeOID: UInt32 { PostgresType.int2 }
}

extension String: PostgresArrayDecodable {
    public static var acceptedArrayTypeOIDs: Set<UInt32> { textArrayTypes }
    public static var elementTypeOID: UInt32 { PostgresType.text }
}

extension Array: PostgresDecodable where Element: PostgresArrayDecodable {
    /// One-dimensional arrays in text form: `{1,2,3}`, `{"a b",c,NULL}`. A NULL element is an error
    /// (decode into a non-optional element type); an empty array is `{}`.
    public static func decode(from cell: PostgresCell) throws -> [Element] {
        let bytes = try cell.require([Element].self)
        guard Element.acceptedArrayTypeOIDs.contains(cell.typeOID) else { throw cell.mismatch([Element].self) }
        guard let items = ArrayLiteralParser.parse(bytes) else { throw cell.invalid([Element].self) }
        return try items.map { item in
            guard let item else {
                throw PostgresError(code: .decoding, message: "column \(cell.columnName) holds a NULL array element")
            }
            return try Element.decode(
                from: PostgresCell(bytes: item, typeOID: Element.elementTypeOID, columnName: cell.columnName))
        }
    }
}

/// Parser for one-dimensional PostgreSQL array literals.
///
/// Items are slices of the literal itself; only a quoted item with backslash escapes is copied.
enum ArrayLiteralParser {
    static func parse(_ bytes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>?]? {
        var index = bytes.startIndex
        guard index < bytes.endIndex, bytes[index] == UInt8(ascii: "{") else { return nil }
        index += 1
        var items: [ArraySlice<UInt8>?] = []
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: "}") {
            return index + 1 == bytes.endIndex ? [] : nil
        }
        while index < bytes.endIndex {
            let item: ArraySlice<UInt8>
            var quoted = false
            if bytes[index] == UInt8(ascii: "{") { return nil }  // multi-dimensional: not supported
            if bytes[index] == UInt8(ascii: "\"") {
                quoted = true
                index += 1
                let start = index
                var unescaped: [UInt8]?
                while index < bytes.endIndex, bytes[index] != UInt8(ascii: "\"") {
                    if bytes[index] == UInt8(ascii: "\\") {
                        if unescaped == nil { unescaped = Array(bytes[start..<index]) }
                        index += 1
                        guard index < bytes.endIndex else { return nil }
                    }
                    unescaped?.append(bytes[index])
                    index += 1
                }
                guard index < bytes.endIndex else { return nil }
                item = unescaped.map { $0[...] } ?? bytes[start..<index]
                index += 1  // closing quote
            } else {
                let start = index
                while index < bytes.endIndex, bytes[index] != UInt8(ascii: ","), bytes[index] != UInt8(ascii: "}") {
                    index += 1
                }
                item = bytes[start..<index]
            }
            items.append(!quoted && item.elementsEqual("NULL".utf8) ? nil : item)
            guard index < bytes.endIndex else { return nil }
            if bytes[index] == UInt8(ascii: "}") { return index + 1 == bytes.endIndex ? items : nil }
            guard bytes[index] == UInt8(ascii: ",") else { return nil }
            index += 1
        }
        return nil
    }
}
