import Foundation

/// The sign-up fields a user registered with (the SeSAC `phoneNumber`, `FCMtoken`, `nick`, `birth`,
/// `email`, `gender`), kept as an opaque JSON object: the ledger stores and returns it, never reads it.
public struct UserProfile: Sendable, Hashable {
    /// The profile as JSON object text.
    public let json: String

    /// Wraps JSON text; it must be a JSON object, and no string in it may contain U+0000.
    public init(json: String) throws {
        guard let data = json.data(using: .utf8),
            let object = (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) as? [String: Any]
        else {
            throw LedgerError(.invalidInput, "a user profile must be a JSON object")
        }
        // Valid JSON (`"\u0000"`), but PostgreSQL's jsonb refuses it (22P05): refuse it here, as input.
        guard !Self.containsNUL(object) else {
            throw LedgerError(.invalidInput, "a user profile cannot contain the character U+0000")
        }
        self.json = json
    }

    private static func containsNUL(_ value: Any) -> Bool {
        switch value {
        case let text as String: text.unicodeScalars.contains("\u{0}")
        case let object as [String: Any]: object.contains { containsNUL($0.key) || containsNUL($0.value) }
        case let array as [Any]: array.contains { containsNUL($0) }
        default: false
        }
    }

    /// Encodes a value (any `Encodable` that encodes as an object) with sorted keys.
    public init<Value: Encodable>(encoding value: Value) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        try self.init(json: String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    /// Decodes the profile into the caller's own type.
    public func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        try JSONDecoder().decode(type, from: Data(json.utf8))
    }

    /// A profile read back from the database (already a JSON object there).
    init(storedJSON: String) {
        self.json = storedJSON
    }
}
