/// Why a report could not be made or written. `description` is a sentence for the operator.
public struct ReportError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A date, range, zone or option the report cannot use.
        public static let invalidInput = Code("invalid_input")
        /// The time zone is not a name the database knows.
        public static let unknownTimeZone = Code("unknown_time_zone")
        /// The report could not be written to disk.
        public static let writeFailed = Code("write_failed")
        /// A figure does not fit in 64-bit milliunits.
        public static let overflow = Code("overflow")
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
