import CLibPQ
import Foundation
import Synchronization

/// One libpq connection (`PGconn *`). Queries are sent without blocking by the leasing task and
/// their answers read by the reactor thread (`roundTrips`, `RoundTrip.swift`); connecting, scripts,
/// COPY and clean-up ROLLBACKs make blocking calls from the client's thread pool.
///
/// `@unchecked Sendable` is safe because the pool leases a connection to exactly one task at a
/// time and every libpq call on `handle` is made sequentially, by that task, by thread-pool jobs it
/// awaits, or by the reactor while the task awaits a round trip (under the waiter's lock); libpq
/// allows one thread at a time per `PGconn`. The only state touched concurrently is
/// `cancelState`, behind a `Mutex`, and the `PGcancel` object, which libpq documents as safe to use
/// from another thread. Plain state such as the prepared-statement cache (`statements`) is covered
/// by the same one-job-at-a-time invariant.
final class PGConnection: @unchecked Sendable {
    enum TransactionStatus { case idle, active, inTransaction, inError, unknown }

    /// Internal (not private) for the extensions in this module that make libpq calls.
    let handle: OpaquePointer
    private let cancelHandle: OpaquePointer?
    let id: Int
    let openedAt: ContinuousClock.Instant
    /// Set when an operation failed in a way that leaves the connection unusable.
    private(set) var isBroken = false
    private var isClosed = false
    /// Statements this session has prepared; see `PGConnection+PreparedStatements.swift`.
    var statements: PreparedStatementCache
    /// The query in flight and the task waiting for it.
    let roundTrips: RoundTripWaiter

    private struct CancelState {
        var operation: UInt64?
        var running = false
        var cancelRequested = false
    }
    private let cancelState = Mutex(CancelState())

    /// Who owns `cancelHandle`: `close()` frees it, unless a cancel request is being sent with it
    /// (possibly stuck on a hung server), in which case the sender frees it when libpq returns. So
    /// `close()` never waits for a cancel.
    private struct CancelHandleState {
        var sending = 0
        var closed = false
        var freed = false
    }
    private let cancelHandleState = Mutex(CancelHandleState())

    /// Set when a cancel request failed (libpq could not send it), or when the task that ran a
    /// query stopped waiting for it (`abandon()`): the pool must not lease this connection again.
    private let condemned = Atomic<Bool>(false)
    private let abandoned = Atomic<Bool>(false)

    private init(handle: OpaquePointer, id: Int, statementCacheCapacity: Int, statementMaxUses: Int) {
        self.handle = handle
        self.statements = PreparedStatementCache(capacity: statementCacheCapacity, maxUses: statementMaxUses)
        self.cancelHandle = PQgetCancel(handle)
        self.roundTrips = RoundTripWaiter(handle: handle)
        // Server notices (e.g. "… does not exist, skipping") would go to stderr by default.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        self.id = id
        self.openedAt = .now
    }

    deinit {
        close()
    }

    /// Opens a connection; blocks for as long as libpq's connect does.
    static func connect(_ configuration: ConnectionConfiguration, id: Int) throws(PostgresError) -> PGConnection {
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
            handle: raw, id: id, statementCacheCapacity: configuration.preparedStatementCacheSize,
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
    func close() {
        guard !isClosed else { return }
        isClosed = true
        let freeCancelHandle = cancelHandleState.withLock { state -> Bool in
            state.closed = true
            guard state.sending == 0, !state.freed else { return false }
            state.freed = true
            return true
        }
        if freeCancelHandle, let cancelHandle { PQfreeCancel(cancelHandle) }
        roundTrips.close()
        PQfinish(handle)
    }

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
        guard !isBroken, !isClosed, !isCondemned, PQstatus(handle) == CONNECTION_OK else { return false }
        if roundTrips.isWatchedAndQuiet { return true }
        let socket = PQsocket(handle)
        guard socket >= 0, clibpq_socket_readable(socket) == 0 else { return false }
        return true
    }

    // MARK: Cancellation

    /// Registers `operation` as the next one on this connection, before it is scheduled.
    func prepare(operation: UInt64) {
        cancelState.withLock { $0 = CancelState(operation: operation) }
    }

    /// Called from a task-cancellation handler (any thread). Returns true when a running query
    /// needs a cancel request sent to the server.
    func requestCancel(operation: UInt64) -> Bool {
        cancelState.withLock { state in
            guard state.operation == operation else { return false }
            state.cancelRequested = true
            return state.running
        }
    }

    /// Sends a cancel request to the server (blocking; opens a short connection of its own, which
    /// on a hung server can block for as long as the server is hung: run it on the cancel threads).
    /// Returns false when libpq reports it could not send it (then the connection is condemned).
    @discardableResult
    func sendCancel() -> Bool {
        let usable = cancelHandleState.withLock { state -> Bool in
            guard !state.closed, !state.freed else { return false }
            state.sending += 1
            return true
        }
        guard usable, let cancelHandle else { return true }
        var buffer = [CChar](repeating: 0, count: 256)
        let sent = PQcancel(cancelHandle, &buffer, Int32(buffer.count)) == 1
        let freeNow = cancelHandleState.withLock { state -> Bool in
            state.sending -= 1
            guard state.closed, state.sending == 0, !state.freed else { return false }
            state.freed = true
            return true
        }
        if freeNow { PQfreeCancel(cancelHandle) }
        if !sent { condemn() }
        return sent
    }

    /// Marks the connection as never to be leased again (see `condemned`).
    func condemn() { condemned.store(true, ordering: .releasing) }

    /// The task that ran a job on this connection stopped waiting for it; the job still runs (or is
    /// queued) on a pool thread, so nothing else may touch the connection: whoever still holds the
    /// lease leaves it alone, and the pool closes it when the job returns.
    func abandon() {
        condemn()
        abandoned.store(true, ordering: .releasing)
    }

    var isAbandoned: Bool { abandoned.load(ordering: .acquiring) }

    /// The grace after cancelling `operation` ran out. If it still runs, the connection is abandoned
    /// and its task resumed with `error` (`RoundTripWaiter.abandon`); checked under the same lock as
    /// `end()`, so an operation that has finished is never abandoned after the fact.
    func abandon(operation: UInt64, with error: PostgresError, reclaim: @escaping @Sendable () -> Void) {
        cancelState.withLock { state in
            guard state.operation == operation, state.running else { return }
            abandon()
            roundTrips.abandon(with: error, reclaim: reclaim)
        }
    }

    func checkNotAbandoned() throws(PostgresError) {
        if isAbandoned {
            throw PostgresError(
                code: .queryCancelled, message: "the connection was abandoned after a cancel the server did not answer")
        }
    }

    /// True when the pool must discard this connection instead of reusing it.
    var isCondemned: Bool { condemned.load(ordering: .acquiring) }

    func begin(operation: UInt64) throws(PostgresError) {
        let cancelled = cancelState.withLock { state -> Bool in
            if state.operation == operation && state.cancelRequested { return true }
            state.operation = operation
            state.running = true
            return false
        }
        if cancelled { throw PostgresError(code: .queryCancelled, message: "cancelled before it was sent") }
    }

    /// Throws `.queryCancelled` when the awaiting task asked to cancel while an earlier step of this
    /// operation ran (a cancel request reaching an idle server is dropped, so a later step must
    /// not go ahead as if nothing happened).
    func throwIfCancelRequested(query: String) throws(PostgresError) {
        if cancelState.withLock({ $0.cancelRequested }) {
            throw PostgresError(code: .queryCancelled, message: "cancelled", query: query)
        }
    }

    func end() {
        cancelState.withLock { $0 = CancelState() }
    }

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
    func execute(
        _ query: PostgresQuery, operation: UInt64, executor: BlockingExecutor
    ) async throws(PostgresError) -> PostgresRows {
        try begin(operation: operation)
        defer { end() }
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
        switch await roundTrips.roundTrip(send) {
        case .results(let results):
            let reported = results.first { PQresultStatus($0) == PGRES_FATAL_ERROR } ?? results.last
            for result in results where result != reported { PQclear(result) }
            guard let reported else { throw connectionFailure(query: query) }
            return reported
        case .failed:
            isBroken = true
            throw connectionFailure(query: query)
        case .abandoned(let error):
            throw error
        }
    }

    /// Runs a script of several statements with the simple protocol (`PQexec`); no parameters.
    /// Stops at the first error.
    func executeScript(_ sql: String, operation: UInt64) throws(PostgresError) {
        try begin(operation: operation)
        defer { end() }
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

    func checkUsable(query: String) throws(PostgresError) {
        guard !isBroken, !isClosed, !isCondemned else {
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
        if sqlState == .queryCanceled && cancelState.withLock({ $0.cancelRequested }) {
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
