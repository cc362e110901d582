/// The one error type of the `Postgres` module.
///
/// `description` is safe to log: it names the kind, the SQLSTATE and the server's message, never bound
/// values. `debugDescription` adds detail, hint, constraint and the failing SQL text (still no values).
public struct PostgresError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What went wrong, as an extensible code (compare with `==`).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The server answered with an error; see `sqlState` and the server fields.
        public static let server = Code("server")
        /// A connection could not be made (bad address, refused, authentication).
        public static let connectionFailed = Code("connection_failed")
        /// The connection broke while in use (server restarted, network cut).
        public static let connectionClosed = Code("connection_closed")
        /// The query was cancelled because the awaiting task was cancelled.
        public static let queryCancelled = Code("query_cancelled")
        /// No connection became free within the pool's lease timeout.
        public static let poolTimeout = Code("pool_timeout")
        /// The pool has shut down.
        public static let poolClosed = Code("pool_closed")
        /// A value could not be decoded into the requested Swift type.
        public static let decoding = Code("decoding")
        /// The caller misused the API (too many parameters, a COPY in the wrong state, ...).
        public static let invalidUsage = Code("invalid_usage")
        /// libpq answered something the wrapper did not expect.
        public static let unexpectedResponse = Code("unexpected_response")
        /// Migrations could not be applied (a changed file, a gap, ...).
        public static let migration = Code("migration")
    }

    public var code: Code
    /// SQLSTATE of a server error, e.g. `23505`.
    public var sqlState: SQLState?
    /// The primary message (from the server, libpq or the wrapper).
    public var message: String
    public var detail: String?
    public var hint: String?
    public var constraint: String?
    public var table: String?
    public var column: String?
    /// The SQL text that failed, without bound values.
    public var query: String?

    public init(
        code: Code, message: String, sqlState: SQLState? = nil, detail: String? = nil, hint: String? = nil,
        constraint: String? = nil, table: String? = nil, column: String? = nil, query: String? = nil
    ) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.detail = detail
        self.hint = hint
        self.constraint = constraint
        self.table = table
        self.column = column
        self.query = query
    }

    /// True when the connection that produced this error can no longer be used.
    public var isConnectionError: Bool {
        code == .connectionFailed || code == .connectionClosed
            || sqlState?.class == "08" || sqlState == .adminShutdown || sqlState == .crashShutdown
            || sqlState == .cannotConnectNow
    }

    /// True for the failures a transaction retry can cure: serialization failures, deadlocks, and a
    /// prepared statement whose result columns changed under it (the cache has dropped it, so the
    /// next attempt prepares it afresh).
    public var isRetryableTransactionFailure: Bool {
        sqlState == .serializationFailure || sqlState == .deadlockDetected || isStalePreparedStatement
    }

    /// 0A000 "cached plan must not change result type": a table a prepared statement reads changed
    /// shape (e.g. a column added under `SELECT *`).
    var isStalePreparedStatement: Bool {
        sqlState == .featureNotSupported && message.hasPrefix("cached plan must not change result type")
    }

    public var description: String {
        var text = "PostgresError(\(code)"
        if let sqlState { text += ", sqlstate \(sqlState.rawValue)" }
        return text + "): \(message)"
    }

    public var debugDescription: String {
        var parts = [description]
        if let detail { parts.append("detail: \(detail)") }
        if let hint { parts.append("hint: \(hint)") }
        if let constraint { parts.append("constraint: \(constraint)") }
        if let table { parts.append("table: \(table)") }
        if let column { parts.append("column: \(column)") }
        if let query { parts.append("query: \(query)") }
        return parts.joined(separator: "\n  ")
    }
}

/// A five-character SQLSTATE code; unknown codes are kept as they are.
public struct SQLState: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
    /// The two-character class, e.g. `23` for integrity constraint violations.
    public var `class`: Substring { rawValue.prefix(2) }

    public static let uniqueViolation = SQLState("23505")
    public static let foreignKeyViolation = SQLState("23503")
    public static let notNullViolation = SQLState("23502")
    public static let checkViolation = SQLState("23514")
    public static let exclusionViolation = SQLState("23P01")
    public static let serializationFailure = SQLState("40001")
    public static let deadlockDetected = SQLState("40P01")
    public static let queryCanceled = SQLState("57014")
    public static let adminShutdown = SQLState("57P01")
    public static let crashShutdown = SQLState("57P02")
    public static let cannotConnectNow = SQLState("57P03")
    public static let undefinedTable = SQLState("42P01")
    public static let syntaxError = SQLState("42601")
    public static let numericValueOutOfRange = SQLState("22003")
    public static let invalidTextRepresentation = SQLState("22P02")
    public static let characterNotInRepertoire = SQLState("22021")
    public static let raiseException = SQLState("P0001")
    public static let insufficientPrivilege = SQLState("42501")
    public static let featureNotSupported = SQLState("0A000")
    public static let invalidSQLStatementName = SQLState("26000")
    public static let inFailedSQLTransaction = SQLState("25P02")
}
