import CLibPQ

/// Running statements through the connection's prepared-statement cache.
///
/// A statement with parameters is prepared (`PQprepare`) the first time this session sees its text
/// and parameter types, then executed by name (`PQexecPrepared`): a cache hit is one round trip
/// (Bind/Execute/Sync) and the server skips parsing, and planning too once it settles on a generic
/// plan. Rules:
/// - Statements without parameters (BEGIN, COMMIT, utility statements, scripts) and COPY stay
///   unnamed: they have nothing to reuse, or cannot be prepared.
/// - Inside a failed transaction a statement goes unnamed: it can only fail with 25P02, and a
///   PREPARE would fail the same way.
/// - "cached plan must not change result type" (0A000; a table read with `SELECT *` changed) drops
///   that statement; "prepared statement … does not exist" (26000; DEALLOCATE ALL or DISCARD ran
///   on the session) drops them all. Outside a transaction the statement has not run, so it is
///   prepared again and retried once; inside one, the error aborted the transaction and is
///   reported, and the next use prepares afresh.
/// - Prepared statements are not transactional (a ROLLBACK keeps them), so a statement prepared
///   inside a transaction that rolls back stays valid.
/// - Evicted or dropped statements are deallocated when the connection is next outside a
///   transaction; a DEALLOCATE that failed inside one would abort it.
/// - DEALLOCATE or DISCARD sent as a statement of its own (or in a script) empties the cache.
extension PGConnection {
    /// Sends one statement and returns its result (success or error status), for `rows(from:)`.
    /// Each step is one round trip through the reactor (`roundTrip`).
    func run(_ query: PostgresQuery) async throws(PostgresError) -> OpaquePointer {
        try checkUsable(query: query.sql)
        let parameters = try BoundParameters(query)
        let status = transactionStatus
        if status == .idle { try await deallocatePending(query: query.sql) }
        guard statements.isEnabled, !query.binds.isEmpty, status != .inError else {
            let result = try await roundTrip(query: query.sql) { handle in
                parameters.withValues { values in
                    PQsendQueryParams(
                        handle, query.sql, parameters.count, parameters.types, values, parameters.lengths,
                        parameters.formats, 0)
                }
            }
            if query.binds.isEmpty, Self.mayDiscardPreparedStatements(query.sql),
                PQresultStatus(result) == PGRES_COMMAND_OK
            {
                statements.retireAll()
            }
            return result
        }
        let key = PreparedStatementCache.Key(sql: query.sql, parameterTypes: parameters.types)
        if let name = statements.lookup(key) {
            let result = try await executePrepared(name, query, parameters)
            guard let staleness = Staleness(result) else { return result }
            switch staleness {
            case .resultTypeChanged: statements.invalidate(key)
            case .missing: statements.removeAll()
            }
            // In a transaction the error aborted it: report it; the next use prepares afresh.
            guard staleness.retryable, transactionStatus == .idle else { return result }
            PQclear(result)
            try await deallocatePending(query: query.sql)
        }
        let name = statements.makeName()
        if let failure = try await prepareStatement(name, query, parameters) { return failure }
        statements.insert(key, name: name)
        if transactionStatus == .idle { try await deallocatePending(query: query.sql) }
        // A cancel since the PREPARE refuses this round trip (`ConnectionStateMachine.startRoundTrip`).
        return try await executePrepared(name, query, parameters)
    }

    /// Prepares `name`; returns nil on success, or the error result for the caller to report.
    private func prepareStatement(
        _ name: String, _ query: PostgresQuery, _ parameters: BoundParameters
    ) async throws(PostgresError) -> OpaquePointer? {
        let result = try await roundTrip(query: query.sql) { handle in
            PQsendPrepare(handle, name, query.sql, parameters.count, parameters.types)
        }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else { return result }
        PQclear(result)
        return nil
    }

    private func executePrepared(
        _ name: String, _ query: PostgresQuery, _ parameters: BoundParameters
    ) async throws(PostgresError) -> OpaquePointer {
        try await roundTrip(query: query.sql) { handle in
            parameters.withValues { values in
                PQsendQueryPrepared(handle, name, parameters.count, values, parameters.lengths, parameters.formats, 0)
            }
        }
    }

    /// DEALLOCATEs statements evicted from the cache. Only called outside a transaction, where a
    /// failure (the statement is already gone) harms nothing and is ignored; a broken connection
    /// is reported.
    private func deallocatePending(query: String) async throws(PostgresError) {
        guard !statements.pendingDeallocations.isEmpty else { return }
        for name in statements.takePendingDeallocations() {
            let deallocate = "DEALLOCATE " + PostgresQuery.quoteIdentifier(name)
            PQclear(try await roundTrip(query: query) { handle in PQsendQuery(handle, deallocate) })
            if PQstatus(handle) != CONNECTION_OK { throw connectionFailure(query: query) }
        }
    }

    /// True when `sql` may be DEALLOCATE or DISCARD, which drop the session's prepared statements:
    /// the cache then forgets them at once rather than learn it from a failed call (which, inside
    /// a transaction, would abort it). A false alarm only costs preparing again (the forgotten
    /// statements are deallocated: `PreparedStatementCache.retireAll`); statements hidden
    /// from this check (in a function, a DO block) are still caught by their 26000 error.
    static func mayDiscardPreparedStatements(_ sql: String) -> Bool {
        containsASCIICaseInsensitive(sql, "dealloc") || containsASCIICaseInsensitive(sql, "discard")
    }

    private static func containsASCIICaseInsensitive(_ text: String, _ lowercaseNeedle: StaticString) -> Bool {
        let needle = UnsafeBufferPointer(start: lowercaseNeedle.utf8Start, count: lowercaseNeedle.utf8CodeUnitCount)
        var text = text
        return text.withUTF8 { bytes in
            guard bytes.count >= needle.count else { return false }
            for start in 0...(bytes.count - needle.count) {
                var matched = true
                for offset in 0..<needle.count where bytes[start + offset] | 0x20 != needle[offset] {
                    matched = false
                    break
                }
                if matched { return true }
            }
            return false
        }
    }

    /// Why a cached statement can no longer be executed by name.
    private enum Staleness {
        /// 0A000 "cached plan must not change result type": the statement's result columns changed
        /// (e.g. a column added to a table read with `SELECT *`). The server refuses it before
        /// running anything, so it is safe to prepare again and retry outside a transaction; any
        /// other 0A000 is only dropped from the cache, never retried.
        case resultTypeChanged(retryable: Bool)
        /// 26000 invalid_sql_statement_name: the session lost our statements.
        case missing

        init?(_ result: OpaquePointer) {
            guard PQresultStatus(result) == PGRES_FATAL_ERROR,
                let state = PQresultErrorField(result, CLIBPQ_DIAG_SQLSTATE).map({ String(cString: $0) })
            else { return nil }
            switch state {
            case "0A000":
                let message = PQresultErrorField(result, CLIBPQ_DIAG_MESSAGE_PRIMARY).map { String(cString: $0) } ?? ""
                self = .resultTypeChanged(retryable: message.hasPrefix("cached plan must not change result type"))
            case "26000":
                self = .missing
            default:
                return nil
            }
        }

        var retryable: Bool {
            switch self {
            case .resultTypeChanged(let retryable): retryable
            case .missing: true
            }
        }
    }
}
