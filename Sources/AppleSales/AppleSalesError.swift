/// Why a Summary Sales Report was refused, or why a comparison could not be made. A refused file is
/// refused whole: nothing of it is stored.
public struct AppleSalesError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The bytes are not a well-formed report (a bad field, a missing column, a bad gzip stream).
        case malformed
        /// The input is past one of the bounds (`SummarySalesLimits`).
        case tooLarge
        /// No report was imported for the date asked about.
        case noReport
        /// A time zone or date the database refused.
        case invalidInput
    }

    public let code: Code
    /// 1-based line of the file (the header is line 1), when the problem is on one line.
    public let line: Int?
    /// The header name of the column, when the problem is in one field.
    public let column: String?
    /// 1-based position of that column in the header.
    public let columnNumber: Int?
    public let message: String

    public init(_ code: Code, _ message: String, line: Int? = nil, column: String? = nil, columnNumber: Int? = nil) {
        self.code = code
        self.message = message
        self.line = line
        self.column = column
        self.columnNumber = columnNumber
    }

    public var description: String {
        var place: [String] = []
        if let line { place.append("line \(line)") }
        if let column {
            place.append("column \(columnNumber.map { "\($0) " } ?? "")'\(column)'")
        }
        return place.isEmpty ? message : "\(place.joined(separator: ", ")): \(message)"
    }
}
