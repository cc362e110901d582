/// Why `shopledger seed` could not run as asked. `description` is a sentence for the operator.
public struct SeedError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A count, span or option the seed cannot use.
        public static let invalidInput = Code("invalid_input")
        /// The seed cannot run against this database as asked.
        public static let seedRefused = Code("seed_refused")
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
