import CLibPQ

/// COPY through libpq on one connection: `COPY … FROM STDIN` and `COPY … TO STDOUT`.
extension PGConnection {

    /// Starts `COPY … FROM STDIN`.
    func beginCopyIn(_ query: PostgresQuery) throws(PostgresError) {
        try beginCopy(query, expecting: PGRES_COPY_IN, "not a COPY … FROM STDIN statement")
    }

    func putCopyData(_ bytes: [UInt8]) throws(PostgresError) {
        let sent = bytes.withUnsafeBufferPointer { raw in
            raw.withMemoryRebound(to: CChar.self) { PQputCopyData(handle, $0.baseAddress, Int32($0.count)) }
        }
        guard sent == 1 else {
            throw connectionFailure(query: "COPY FROM STDIN")
        }
    }

    /// Ends COPY IN; with `abortMessage` the server discards everything sent. Returns rows copied.
    func endCopyIn(abortMessage: String?, query: String) throws(PostgresError) -> Int {
        let ended = PQputCopyEnd(handle, abortMessage)
        guard ended == 1 else { throw connectionFailure(query: query) }
        var copied = 0
        var failure: PostgresError?
        while let result = PQgetResult(handle) {
            switch PQresultStatus(result) {
            case PGRES_COMMAND_OK:
                copied = Int(String(cString: PQcmdTuples(result))) ?? 0
            default:
                if failure == nil { failure = error(from: result, query: query) }
            }
            PQclear(result)
        }
        if let failure { throw failure }
        return copied
    }

    /// Starts `COPY … TO STDOUT`.
    func beginCopyOut(_ query: PostgresQuery) throws(PostgresError) {
        try beginCopy(query, expecting: PGRES_COPY_OUT, "not a COPY … TO STDOUT statement")
    }

    /// Sends a COPY statement and checks the server entered the expected COPY state; otherwise throws the server's error, or `misuse` when the statement was not such a COPY.
    private func beginCopy(
        _ query: PostgresQuery, expecting expected: ExecStatusType, _ misuse: String
    ) throws(PostgresError) {
        let result = try send(query)
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == expected else {
            if status == PGRES_FATAL_ERROR { throw error(from: result, query: query.sql) }
            drain()
            throw PostgresError(code: .invalidUsage, message: misuse, query: query.sql)
        }
    }

    /// Reads whole rows until about `limit` bytes are gathered or the COPY ends (`done`).
    func readCopyData(limit: Int, query: String) throws(PostgresError) -> (chunk: [UInt8], done: Bool) {
        var chunk: [UInt8] = []
        while chunk.count < limit {
            var buffer: UnsafeMutablePointer<CChar>?
            let count = PQgetCopyData(handle, &buffer, 0)
            if count > 0, let buffer {
                buffer.withMemoryRebound(to: UInt8.self, capacity: Int(count)) {
                    chunk.append(contentsOf: UnsafeBufferPointer(start: $0, count: Int(count)))
                }
                PQfreemem(buffer)
            } else if count == -1 {
                try finishCopyOut(query: query)
                return (chunk, true)
            } else {
                throw connectionFailure(query: query)
            }
        }
        return (chunk, false)
    }

    private func finishCopyOut(query: String) throws(PostgresError) {
        var failure: PostgresError?
        while let result = PQgetResult(handle) {
            if PQresultStatus(result) != PGRES_COMMAND_OK, failure == nil {
                failure = error(from: result, query: query)
            }
            PQclear(result)
        }
        if let failure { throw failure }
    }
}
