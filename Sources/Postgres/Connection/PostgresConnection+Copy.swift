extension PostgresConnection {
    /// Streams data into `COPY … FROM STDIN`. `body` writes the COPY payload (text or CSV format, as
    /// the statement says) through the writer, which sends it in chunks of about 64 KiB. If `body`
    /// throws, the COPY is aborted and nothing it wrote is kept. Returns the number of rows copied.
    ///
    ///     try await connection.copyFrom("COPY items (id, name) FROM STDIN") { writer in
    ///         try await writer.writeRow([String(id), name])
    ///     }
    @discardableResult
    public func copyFrom(
        isolation: isolated (any Actor)? = #isolation,
        _ query: PostgresQuery,
        _ body: (PostgresCopyWriter) async throws -> Void
    ) async throws -> Int {
        try await cancellable { connection in try connection.beginCopyIn(query) }
        let writer = PostgresCopyWriter(connection: self)
        do {
            try await body(writer)
            try await writer.flush()
        } catch {
            let message = "aborted by the client: \(error)"
            _ = try? await executor.run { [connection] in
                try connection.endCopyIn(abortMessage: message, query: query.sql)
            }
            throw error
        }
        return try await executor.run { [connection] in try connection.endCopyIn(abortMessage: nil, query: query.sql) }
    }

    /// Streams the output of `COPY … TO STDOUT` to `body` as chunks of whole rows (about 64 KiB
    /// each). Whatever `body` leaves unread is drained so the connection stays usable.
    public func copyTo(
        isolation: isolated (any Actor)? = #isolation,
        _ query: PostgresQuery,
        _ body: (PostgresCopyReader) async throws -> Void
    ) async throws {
        try await cancellable { connection in try connection.beginCopyOut(query) }
        let reader = PostgresCopyReader(connection: self, sql: query.sql)
        do {
            try await body(reader)
        } catch {
            try? await reader.drain()
            throw error
        }
        try await reader.drain()
    }
}

/// Writes a COPY FROM STDIN payload; created by `PostgresConnection.copyFrom`.
public final class PostgresCopyWriter {
    private let connection: PostgresConnection
    private var buffer: [UInt8] = []
    private let chunkSize = 64 * 1024

    init(connection: PostgresConnection) {
        self.connection = connection
        buffer.reserveCapacity(chunkSize + 4096)
    }

    /// Appends raw payload bytes.
    public func write(_ bytes: some Sequence<UInt8>) async throws {
        buffer.append(contentsOf: bytes)
        if buffer.count >= chunkSize { try await flush() }
    }

    /// Appends one row in COPY text format: fields separated by tabs, `nil` as `\N`, and
    /// backslash, tab, newline and carriage return escaped.
    public func writeRow(_ fields: [String?]) async throws {
        for (index, field) in fields.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: "\t")) }
            guard let field else {
                buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "N")])
                continue
            }
            for byte in field.utf8 {
                switch byte {
                case UInt8(ascii: "\\"): buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
                case UInt8(ascii: "\t"): buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
                case UInt8(ascii: "\n"): buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
                case UInt8(ascii: "\r"): buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
                default: buffer.append(byte)
                }
            }
        }
        buffer.append(UInt8(ascii: "\n"))
        if buffer.count >= chunkSize { try await flush() }
    }

    func flush() async throws {
        guard !buffer.isEmpty else { return }
        let chunk = buffer
        buffer.removeAll(keepingCapacity: true)
        try await connection.executor.run { [connection = connection.connection] in try connection.putCopyData(chunk) }
    }
}

/// Reads a COPY TO STDOUT stream as chunks of whole rows; created by `PostgresConnection.copyTo`.
public final class PostgresCopyReader: AsyncSequence {
    public typealias Element = [UInt8]
    private let connection: PostgresConnection
    private let sql: String
    private var finished = false
    private let chunkSize = 64 * 1024

    init(connection: PostgresConnection, sql: String) {
        self.connection = connection
        self.sql = sql
    }

    /// The next chunk, or nil at the end of the COPY.
    public func next() async throws -> [UInt8]? {
        guard !finished else { return nil }
        let (chunkSize, sql) = (self.chunkSize, self.sql)
        let (chunk, done) = try await connection.executor.run { [connection = connection.connection] in
            try connection.readCopyData(limit: chunkSize, query: sql)
        }
        finished = done
        return chunk.isEmpty && done ? nil : chunk
    }

    func drain() async throws {
        while try await next() != nil {}
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let reader: PostgresCopyReader
        public mutating func next() async throws -> [UInt8]? { try await reader.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(reader: self) }
}
