import Foundation

/// The one encoding of a view: what the admin API answers and what `--json` prints, byte for byte.
/// Sorted keys (a diff between two answers shows what changed), pretty-printed, slashes unescaped.
/// Views hold their instants as text already (``ViewJSON/timestamp(_:)``), so no date strategy is needed
/// and a view embedded in another answer reads the same under any encoder.
public enum ViewJSON {
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return encoder
    }

    /// `view` encoded: the HTTP body, and the text `--json` prints (with a newline after it).
    public static func data(_ view: some Encodable) throws -> Data {
        try encoder().encode(view)
    }

    /// An instant as the API writes it: ISO 8601 in UTC with milliseconds, `2026-11-27T09:30:00.000Z`.
    public static func timestamp(_ date: Date) -> String {
        date.formatted(timestampStyle)
    }

    private static let timestampStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)
}

/// The null rule of every view (and every `--json` shape): an optional with no value is written as
/// `null`, never left out, so every key of a shape is always there and a script can tell the shape from
/// the value. A synthesized `Encodable` would leave the key out; this wrapper is what keeps it.
@propertyWrapper
public struct NullWhenNil<Value: Encodable>: Encodable {
    public var wrappedValue: Value?

    public init(wrappedValue: Value?) {
        self.wrappedValue = wrappedValue
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

extension NullWhenNil: Sendable where Value: Sendable {}
extension NullWhenNil: Equatable where Value: Equatable {}
