import CLibPQ
import Foundation
import Synchronization

/// One libpq connection (`PGconn *`). Queries are sent without blocking by the leasing task and
/// their answers read by the reactor thread; connecting, scripts, COPY and clean-up ROLLBACKs make
/// blocking calls from the client's thread pool. Who may touch the connection when (a round trip in
/// flight, a job, a cancel, an abandoned or closed connection) is `driver`'s state machine's to say
/// (`ConnectionStateMachine`); the driver owns the handle and alone closes it.
///
/// `@unchecked Sendable` is safe because the pool leases a connection to exactly one task at a
/// time and every libpq call on `handle` is made sequentially: by that task, by thread-pool jobs it
/// awaits, or by the reactor while the task awaits a round trip (under the driver's lock); libpq
/// allows one thread at a time per `PGconn`. State touched concurrently (cancel, abandon, close) lives in
/// the driver, behind its lock. Plain state such as the prepared-statement cache (`statements`) and
/// `isBroken` is covered by the same one-task-at-a-time invariant.
final class PGConnection: @unchecked Sendable {
    enum TransactionStatus { case idle, active, inTransaction, inError, unknown }

    /// Internal (not private) for the extensions in this module that make libpq calls. Valid until the
    /// driver closes the connection (never while an operation or the lease holds it).
    let handle: OpaquePointer
    let id: Int
    let openedAt: ContinuousClock.Instant
    /// Set when an operation failed in a way that leaves the connection unusable.
    private(set) var isBroken = false
    /// Statements this session has prepared; see `PGConnection+PreparedStatements.swift`.
    var statements: PreparedStatementCache
    /// The connection's state machine and the I/O that runs it: round trips, jobs, cancel, abandon, close.
    let driver: ConnectionDriver

    private init(
        handle: OpaquePointer, id: Int, driver: ConnectionDriver, statementCacheCapacity: Int, statementMaxUses: Int
    ) {
        self.handle = handle
        self.statements = PreparedStatementCache(capacity: statementCacheCapacity, maxUses: statementMaxUses)
        self.driver = driver
        // Server notices (e.g. "… does not exist, skipping") would go to stderr by default.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        self.id = id
        self.openedAt = .now
        driver.attach(handle)
    }

    deinit {
        close()
    }

    /// Opens a connection, which `driver` takes over; blocks for as long as libpq's connect does.
    static func connect(
        _ configuration: ConnectionConfiguration, id: Int, driver: ConnectionDriver
    ) throws(PostgresError) -> PGConnection {
        let parameters = try connectParameters(configuration)
        let keywords = parameters.map { strdup($0.0) }
        let values = parameters.map { strdup($0.1) }
        defer {
            keywords.forEach { free($0) }
            values.forEach { free($0) }
        }
        let keywordPointers = keywords.map { UnsafePointer($0) } + [nil]
        let valuePointers = values.map { UnsafePointer($0) } + [nil]
        guard let raw = PQconnectdbParams(keywordPointers, valuePointers, 0) else {
            throw PostgresError(code: .connectionFailed, message: "libpq could not allocate a connection")
        }
        guard PQstatus(raw) == CONNECTION_OK else {
            let message = errorMessage(raw)
            PQfinish(raw)  // always, even for a failed connect
            throw PostgresError(code: .connectionFailed, message: message)
        }
        return PGConnection(
            handle: raw, id: id, driver: driver, statementCacheCapacity: configuration.preparedStatementCacheSize,
            statementMaxUses: configuration.preparedStatementMaxUses)
    }

    /// The URL or conninfo parsed by libpq itself, with the session pins added; a user's own
    /// `options` (e.g. `-c search_path=…`) are kept and ours appended.
    private static func connectParameters(
        _ configuration: ConnectionConfiguration
    ) throws(PostgresError) -> [(String, String)] {
        var parameters: [(String, String)] = []
        if !configuration.url.isEmpty {
            var errorMessage: UnsafeMutablePointer<CChar>?
            guard let parsed = PQconninfoParse(configuration.url, &errorMessage) else {
                let message = errorMessage.map { String(cString: $0).trimmingTrailingNewlines() } ?? "out of memory"
                if let errorMessage { PQfreemem(errorMessage) }
                throw PostgresError(
                    code: .connectionFailed, message: "invalid database URL \(configuration.redacted): \(message)")
            }
            defer { PQconninfoFree(parsed) }
            var option = parsed
            while let keyword = option.pointee.keyword {
                if let value = option.pointee.val {
                    parameters.append((String(cString: keyword), String(cString: value)))
                }
                option += 1
            }
        }
        for (keyword, value) in configuration.sessionParameters {
            if keyword == "options", let index = parameters.firstIndex(where: { $0.0 == "options" }) {
                parameters[index].1 += " " + value
            } else if let index = parameters.firstIndex(where: { $0.0 == keyword }) {
                if !ConnectionConfiguration.defaultedKeywords.contains(keyword) { parameters[index].1 = value }
            } else {
                parameters.append((keyword, value))
            }
        }
        return parameters
    }

    /// Closes the connection; safe to call twice.
    func close() { driver.close() }

    var isClosed: Bool { driver.isClosed }

    var transactionStatus: TransactionStatus {
        switch PQtransactionStatus(handle) {
        case PQTRANS_IDLE: .idle
        case PQTRANS_ACTIVE: .active
        case PQTRANS_INTRANS: .inTransaction
        case PQTRANS_INERROR: .inError
        default: .unknown
        }
    }

    /// Without blocking, tells whether the connection still looks usable. An idle connection has
    /// nothing to read; if its socket is readable, the server spoke or hung up while it sat in the
    /// pool (a shutdown sends "terminating connection due to administrator command", then closes),
    /// so it is not trusted: libpq would only notice on the next query, failing it. When the reactor
    /// watches the socket and has seen nothing since the last answer, that is known without asking.
    func isAlive() -> Bool {
        guard !isBroken else { return false }
        let liveness = driver.liveness
        guard liveness != .unusable, PQstatus(handle) == CONNECTION_OK else { return false }
        if liveness == .watchedAndQuiet { return true }
        let socket = PQsocket(handle)
        guard socket >= 0, clibpq_socket_readable(socket) == 0 else { return false }
        return true
    }

    /// The task that ran an operation on this connection stopped waiting for it (its cancel was not
    /// answered within the grace): whoever still holds the lease leaves it alone, and it is closed when
    /// what still runs on it ends.
    var isAbandoned: Bool { driver.isAbandoned }

    /// True when the pool must discard this connection instead of reusing it.
    var isCondemned: Bool { driver.isCondemned }

    // MARK: Queries

    /// Rolls back a transaction left open (a body threw, or a cancel interrupted it); a failure
    /// leaves the connection marked broken so the pool discards it. Blocking: on the pool's threads.
    func rollbackIfInTransaction() {
        guard !isBroken, !isClosed, transactionStatus != .idle else { return }
        guard let result = PQexec(handle, "ROLLBACK") else {
            isBroken = true
            return
        }
        if PQresultStatus(result) != PGRES_COMMAND_OK || PQstatus(handle) != CONNECTION_OK { isBroken = true }
        PQclear(result)
    }

    /// Runs one statement and copies the whole result into Swift memory. Statements with
    /// parameters go through the connection's prepared-statement cache (`run`).
    func execute(_ query: PostgresQuery, executor: BlockingExecutor) async throws(PostgresError) -> PostgresRows {
        let result = try await run(query)
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH {
            // Ending the COPY blocks on the server: on the pool's threads, not the task's.
            _ = try? await executor.run { [self] in abortCopy(status: status) }
        }
        return try rows(from: result, query: query)
    }

    /// One round trip through the reactor: `send` is a `PQsend…` call; returns the result to report
    /// (the first error, else the last result) and clears the others.
    func roundTrip(query: String, _ send: (OpaquePointer) -> Int32) async throws(PostgresError) -> OpaquePointer {
        switch await driver.roundTrip(send) {
        case .results(let results):
            let reported = results.first { PQresultStatus($0) == PGRES_FATAL_ERROR } ?? results.last
            for result in results where result != reported { PQclear(result) }
            guard let reported else { throw connectionFailure(query: query) }
            return reported
        case .failed:
            isBroken = true
            throw connectionFailure(query: query)
        case .refused(var error):
            error.query = error.query ?? query
            throw error
        case .jobReturned:
            throw connectionFailure(query: query)
        }
    }

    /// Runs a script of several statements with the simple protocol (`PQexec`); no parameters.
    /// Stops at the first error.
    func executeScript(_ sql: String) throws(PostgresError) {
        // Whatever the outcome, a script that may have dropped our prepared statements empties the
        // cache; if it did not, they are deallocated and prepared again when next used.
        if Self.mayDiscardPreparedStatements(sql) { statements.retireAll() }
        guard let result = PQexec(handle, sql) else { throw connectionFailure(query: sql) }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY else {
            if status == PGRES_COPY_IN || status == PGRES_COPY_OUT { abortCopy(status: status) }
            throw error(from: result, query: String(sql.prefix(2000)))
        }
    }

    /// Sends one statement unnamed and blocks for its result (COPY, on the pool's threads).
    func send(_ query: PostgresQuery) throws(PostgresError) -> OpaquePointer {
        try checkUsable(query: query.sql)
        let parameters = try BoundParameters(query)
        let result = parameters.withValues { values in
            PQexecParams(
                handle, query.sql, parameters.count, parameters.types, values, parameters.lengths, parameters.formats, 0
            )
        }
        guard let result else { throw connectionFailure(query: query.sql) }
        return result
    }

    /// A connection a failure broke. (One condemned, abandoned or closed is refused by the driver
    /// before an operation starts.)
    func checkUsable(query: String) throws(PostgresError) {
        guard !isBroken else {
            throw PostgresError(code: .connectionClosed, message: "the connection is closed", query: query)
        }
    }

    private func rows(from result: OpaquePointer, query: PostgresQuery) throws(PostgresError) -> PostgresRows {
        let status = PQresultStatus(result)
        switch status {
        case PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            return .empty(commandTag: String(cString: PQcmdStatus(result)))
        case PGRES_TUPLES_OK, PGRES_SINGLE_TUPLE:
            return Self.copyRows(result)
        case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
            // `execute` has ended the COPY; refuse: COPY has its own API.
            throw PostgresError(code: .invalidUsage, message: "COPY needs copyFrom/copyTo, not query", query: query.sql)
        default:
            throw error(from: result, query: query.sql)
        }
    }

    private static func copyRows(_ result: OpaquePointer) -> PostgresRows {
        let rowCount = Int(PQntuples(result))
        let columnCount = Int(PQnfields(result))
        var columns: [PostgresRows.Column] = []
        columns.reserveCapacity(columnCount)
        for column in 0..<columnCount {
            columns.append(
                .init(name: String(cString: PQfname(result, Int32(column))), typeOID: PQftype(result, Int32(column))))
        }
        var storage: [UInt8] = []
        var cells: [(start: Int, length: Int)] = []
        cells.reserveCapacity(rowCount * columnCount)
        for row in 0..<Int32(rowCount) {
            for column in 0..<Int32(columnCount) {
                if PQgetisnull(result, row, column) != 0 {
                    cells.append((storage.count, -1))
                    continue
                }
                let length = Int(PQgetlength(result, row, column))
                let start = storage.count
                if length > 0, let value = PQgetvalue(result, row, column) {
                    value.withMemoryRebound(to: UInt8.self, capacity: length) {
                        storage.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
                    }
                }
                cells.append((start, length))
            }
        }
        return PostgresRows(
            columns: columns, storage: storage, cells: cells, rowCount: rowCount,
            commandTag: String(cString: PQcmdStatus(result)))
    }

    // MARK: COPY a plain query ran into

    func abortCopy(status: ExecStatusType) {
        if status == PGRES_COPY_IN {
            _ = PQputCopyEnd(handle, "COPY is not supported through query()")
        } else if status == PGRES_COPY_OUT {
            var buffer: UnsafeMutablePointer<CChar>?
            while PQgetCopyData(handle, &buffer, 0) > 0 {
                PQfreemem(buffer)
                buffer = nil
            }
        } else {
            isBroken = true
        }
        drain()
    }

    /// Consumes any remaining results so the connection is ready for the next command.
    func drain() {
        while let result = PQgetResult(handle) { PQclear(result) }
    }

    // MARK: Errors

    func connectionFailure(query: String?) -> PostgresError {
        let message = Self.errorMessage(handle)
        if PQstatus(handle) != CONNECTION_OK { isBroken = true }
        return PostgresError(code: isBroken ? .connectionClosed : .unexpectedResponse, message: message, query: query)
    }

    func error(from result: OpaquePointer, query: String?) -> PostgresError {
        func field(_ code: Int32) -> String? {
            PQresultErrorField(result, code).map { String(cString: $0) }
        }
        let sqlState = field(CLIBPQ_DIAG_SQLSTATE).map(SQLState.init)
        var message = field(CLIBPQ_DIAG_MESSAGE_PRIMARY) ?? String(cString: PQresultErrorMessage(result))
        if message.isEmpty { message = Self.errorMessage(handle) }
        if PQstatus(handle) != CONNECTION_OK { isBroken = true }
        let code: PostgresError.Code
        if sqlState == .queryCanceled && driver.isCancelRequested {
            code = .queryCancelled
        } else if sqlState == nil && isBroken {
            code = .connectionClosed
        } else {
            code = .server
        }
        var error = PostgresError(
            code: code, message: message.trimmingTrailingNewlines(), sqlState: sqlState,
            detail: field(CLIBPQ_DIAG_MESSAGE_DETAIL), hint: field(CLIBPQ_DIAG_MESSAGE_HINT),
            constraint: field(CLIBPQ_DIAG_CONSTRAINT_NAME), table: field(CLIBPQ_DIAG_TABLE_NAME),
            column: field(CLIBPQ_DIAG_COLUMN_NAME), query: query)
        if error.isConnectionError {
            isBroken = true; error.code = error.code == .server ? .connectionClosed : error.code
        }
        return error
    }

    private static func errorMessage(_ handle: OpaquePointer) -> String {
        String(cString: PQerrorMessage(handle)).trimmingTrailingNewlines()
    }
}

extension String {
    func trimmingTrailingNewlines() -> String {
        var text = self
        while text.last?.isNewline == true { text.removeLast() }
        return text
    }
}
