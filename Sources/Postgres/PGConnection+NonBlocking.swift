import CLibPQ

/// The non-blocking way to run a statement, for `PostgresConnection.query` with a `SocketReactor`:
/// every call here returns without waiting on the network (libpq's non-blocking mode: sends only
/// fill the socket buffer; reads only take what has arrived), so it may run on a cooperative
/// thread; the task waits for the socket in the reactor between calls.
///
/// Only the common cases go this way: a cache hit, or a statement that goes unnamed anyway, with
/// nothing to deallocate first. Everything else (a cache miss that must prepare, a COPY statement
/// sent through `query`, a stale statement to prepare again) finishes on the blocking path.
extension PGConnection {
    enum NonBlockingStep {
        /// Wait until the socket is readable (or writable), then call `receiveWithoutBlocking` again.
        case wantRead
        case wantWrite
        case done(PostgresRows)
        /// Run the statement (again) with the blocking `execute` on the thread pool.
        case useBlockingPath
    }

    /// What is in flight between `sendWithoutBlocking` and the last `receiveWithoutBlocking`.
    struct InFlight {
        let query: PostgresQuery
        /// The cache key when sent by name.
        let key: PreparedStatementCache.Key?
        var result: OpaquePointer?
    }

    var socket: Int32 { PQsocket(handle) }

    /// Sends the statement if it can take the non-blocking path; `.useBlockingPath` otherwise
    /// (nothing sent). On `.wantRead`/`.wantWrite` it is on its way.
    func sendWithoutBlocking(_ query: PostgresQuery, operation: UInt64) throws(PostgresError) -> NonBlockingStep {
        try checkUsable(query: query.sql)
        let parameters = try BoundParameters(query)
        let status = transactionStatus
        guard status == .idle || status == .inTransaction || status == .inError else { return .useBlockingPath }
        if status == .idle && !statements.pendingDeallocations.isEmpty { return .useBlockingPath }
        var name: String?
        var key: PreparedStatementCache.Key?
        if statements.isEnabled, !query.binds.isEmpty, status != .inError {
            let cacheKey = PreparedStatementCache.Key(sql: query.sql, parameterTypes: parameters.types)
            guard let cached = statements.lookup(cacheKey) else { return .useBlockingPath }
            name = cached
            key = cacheKey
        } else if query.binds.isEmpty, Self.mayDiscardPreparedStatements(query.sql) {
            return .useBlockingPath
        }
        try begin(operation: operation)
        guard PQsetnonblocking(handle, 1) == 0 else {
            end()
            throw connectionFailure(query: query.sql)
        }
        let sent = parameters.withValues { values in
            if let name {
                return PQsendQueryPrepared(handle, name, parameters.count, values, parameters.lengths, parameters.formats, 0)
            }
            return PQsendQueryParams(handle, query.sql, parameters.count, parameters.types, values, parameters.lengths, parameters.formats, 0)
        }
        guard sent == 1 else {
            _ = PQsetnonblocking(handle, 0)
            end()
            throw connectionFailure(query: query.sql)
        }
        inFlight = InFlight(query: query, key: key)
        return try flushWithoutBlocking()
    }

    /// Reads what has arrived; `.done` with the rows (or throws the statement's error) once the
    /// server has sent everything for the statement.
    func receiveWithoutBlocking() throws(PostgresError) -> NonBlockingStep {
        guard var flight = inFlight else {
            throw PostgresError(code: .invalidUsage, message: "no statement in flight")
        }
        if case .wantWrite = try flushWithoutBlocking() { return .wantWrite }
        guard PQconsumeInput(handle) == 1 else {
            abandon(flight)
            throw connectionFailure(query: flight.query.sql)
        }
        while PQisBusy(handle) == 0 {
            guard let result = PQgetResult(handle) else {
                return try finish(flight)
            }
            let status = PQresultStatus(result)
            if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH {
                // Misuse (COPY through query): the blocking path knows how to get out of it.
                PQclear(result)
                abandon(flight)
                markBroken()
                throw PostgresError(code: .invalidUsage, message: "COPY needs copyFrom/copyTo, not query", query: flight.query.sql)
            }
            // One statement gives one result; keep the first.
            if flight.result == nil { flight.result = result } else { PQclear(result) }
            inFlight = flight
        }
        return .wantRead
    }

    private func flushWithoutBlocking() throws(PostgresError) -> NonBlockingStep {
        switch PQflush(handle) {
        case 0: return .wantRead
        case 1: return .wantWrite
        default:
            if let flight = inFlight { abandon(flight) }
            throw connectionFailure(query: inFlight?.query.sql)
        }
    }

    /// Everything arrived: back to blocking mode, then the same handling as the blocking path.
    private func finish(_ flight: InFlight) throws(PostgresError) -> NonBlockingStep {
        inFlight = nil
        _ = PQsetnonblocking(handle, 0)
        guard let result = flight.result else {
            end()
            throw PostgresError(code: .unexpectedResponse, message: "no result for the statement", query: flight.query.sql)
        }
        if let key = flight.key, let staleness = PreparedStatementStaleness(result) {
            staleness.apply(to: &statements, key: key)
            if staleness.retryable && transactionStatus == .idle {
                // Not run: prepare again on the blocking path. The operation stays registered so a
                // cancel in between is not lost.
                PQclear(result)
                return .useBlockingPath
            }
        }
        defer {
            PQclear(result)
            end()
        }
        return .done(try rows(from: result, query: flight.query))
    }

    /// The wait for the socket failed (the reactor stopped): the statement's state is unknown, so
    /// the connection is not reused.
    func abandonInFlight() {
        if let flight = inFlight { abandon(flight) }
        markBroken()
    }

    private func abandon(_ flight: InFlight) {
        if let result = flight.result { PQclear(result) }
        inFlight = nil
        _ = PQsetnonblocking(handle, 0)
        end()
    }
}
