import Foundation

/// The one way a `--json` flag prints: pretty, sorted keys (so a diff between two runs shows what
/// changed), ISO 8601 dates, no escaped slashes; the same settings as `reconcile --json`. Each shape
/// spells its snake_case keys out in its `CodingKeys`, so renaming a Swift property cannot change the
/// JSON scripts read; docs/configuration.md documents the shapes.
enum JSONOutput {
    static func text(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Prints `value` as JSON on standard output.
    static func print(_ value: some Encodable) throws {
        Swift.print(try text(value))
    }
}

/// An optional printed as `null` when it has no value, where a synthesized `Encodable` would leave
/// the key out: every key of a shape is always there, so a script can tell the shape from the value.
@propertyWrapper
struct NullWhenNil<Value: Encodable>: Encodable {
    var wrappedValue: Value?

    init(wrappedValue: Value?) {
        self.wrappedValue = wrappedValue
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}
