/// SQL text with its bound values kept apart.
///
/// Written as a string literal with interpolations, every `\(value)` becomes a `$n` placeholder and
/// the value travels separately, so input can never change the SQL:
///
///     let rows = try await client.query("SELECT nick FROM users WHERE uid = \(uid)")
///
/// The only ways to put text into the SQL itself are explicit: `\(unsafeSQL: "...")` for trusted
/// fragments written by the programmer, and `\(identifier: name)` for a quoted identifier. Another
/// `PostgresQuery` interpolated is a fragment: its placeholders are renumbered, its values still bound.
public struct PostgresQuery: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The SQL with `$1 … $n` placeholders.
    public private(set) var sql: String
    public private(set) var binds: [PostgresBind]

    /// Build a query from trusted SQL text and explicit bindings for its `$n` placeholders.
    public init(unsafeSQL sql: String, binds: [PostgresBind] = []) {
        self.sql = sql
        self.binds = binds
    }

    public init(stringLiteral value: String) {
        self.sql = value
        self.binds = []
    }

    public init(stringInterpolation: StringInterpolation) {
        self.sql = stringInterpolation.sql
        self.binds = stringInterpolation.binds
    }

    /// The SQL text only: bound values are never printed.
    public var description: String { sql }

    public struct StringInterpolation: StringInterpolationProtocol {
        var sql: String
        var binds: [PostgresBind]

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql = ""
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
            binds = []
            binds.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) {
            sql += literal
        }

        /// Binds a value as the next `$n` parameter.
        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value) {
            binds.append(value.postgresBind)
            sql += "$\(binds.count)"
        }

        /// Binds an optional value; `nil` is SQL NULL.
        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value?) {
            binds.append(value.map(\.postgresBind) ?? .null(oid: Value.postgresTypeOID))
            sql += "$\(binds.count)"
        }

        /// Inserts trusted SQL text verbatim. Never pass input here.
        public mutating func appendInterpolation(unsafeSQL fragment: String) {
            sql += fragment
        }

        /// Inserts another query as a fragment (a subquery written once and used in several statements):
        /// its SQL, with its `$n` placeholders renumbered after this query's, and its binds.
        public mutating func appendInterpolation(_ fragment: PostgresQuery) {
            let offset = binds.count
            var scalars = fragment.sql.unicodeScalars[...]
            while let dollar = scalars.firstIndex(of: "$") {
                sql.unicodeScalars.append(contentsOf: scalars[...dollar])
                scalars = scalars[scalars.index(after: dollar)...]
                let digits = scalars.prefix { ("0"..."9").contains($0) }
                guard let number = Int(String(String.UnicodeScalarView(digits))) else { continue }
                sql += String(number + offset)
                scalars = scalars.dropFirst(digits.count)
            }
            sql.unicodeScalars.append(contentsOf: scalars)
            binds += fragment.binds
        }

        /// Inserts a double-quoted identifier (table, column or schema name).
        public mutating func appendInterpolation(identifier: String) {
            sql += PostgresQuery.quoteIdentifier(identifier)
        }
    }

    /// Quotes an identifier the way `PQescapeIdentifier` does for UTF-8: wrap in double quotes and
    /// double any embedded quote. NUL characters cannot be sent and are dropped.
    public static func quoteIdentifier(_ name: String) -> String {
        var quoted = "\""
        for scalar in name.unicodeScalars where scalar != "\0" {
            if scalar == "\"" { quoted += "\"\"" } else { quoted.unicodeScalars.append(scalar) }
        }
        return quoted + "\""
    }

}

/// One bound parameter: its wire form and type OID (0 lets the server infer the type from context).
public struct PostgresBind: Sendable, Hashable {
    public enum Value: Sendable, Hashable {
        case null
        /// Text format; must not contain NUL.
        case text(String)
        /// Binary format (used for `bytea`).
        case binary([UInt8])
    }

    public var value: Value
    public var oid: UInt32

    public init(_ value: Value, oid: UInt32) {
        self.value = value
        self.oid = oid
    }

    public static func null(oid: UInt32 = 0) -> PostgresBind { PostgresBind(.null, oid: oid) }
    public static func text(_ text: String, oid: UInt32 = 0) -> PostgresBind { PostgresBind(.text(text), oid: oid) }
}
