/// Why `shopledger seed` could not run as asked: a count or span it cannot use, or a database it
/// must not fill. `description` is a sentence for the operator; nothing reads more than that.
public struct SeedError: Error, Sendable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
