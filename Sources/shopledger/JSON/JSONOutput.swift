import APIViews
import Foundation

/// How a `--json` flag prints. A concept the admin API shows too (webhook endpoints, the catalog,
/// purchases and support actions) is printed as its view, byte for byte what the API answers for the
/// same object (``view(_:)``). The command line's own shapes (reports, migrations, sync, standby) use
/// the same encoding and null rule (`ViewJSON`, `NullWhenNil`), their snake_case keys spelled out in
/// their `CodingKeys` and their `Date`s ISO 8601 in whole seconds; docs/configuration.md documents them.
enum JSONOutput {
    static func text(_ value: some Encodable) throws -> String {
        let encoder = ViewJSON.encoder()
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Prints `value` as JSON on standard output.
    static func print(_ value: some Encodable) throws {
        Swift.print(try text(value))
    }

    /// Prints a view as the admin API answers it.
    static func view(_ view: some Encodable) throws {
        Swift.print(String(decoding: try ViewJSON.data(view), as: UTF8.self))
    }
}
