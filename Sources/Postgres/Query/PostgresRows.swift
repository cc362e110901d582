/// The complete result of one statement, copied out of libpq into Swift memory.
///
/// Cells live in one contiguous byte buffer (text format as the server sent it, `bytea` as hex),
/// so a result costs a few allocations however many rows it has.
public struct PostgresRows: Sendable, RandomAccessCollection {
    public struct Column: Sendable, Hashable {
        public let name: String
        public let typeOID: UInt32
    }

    public let columns: [Column]
    /// Rows the command affected, from the command tag (`INSERT 0 3` → 3); nil when it has none.
    public let affectedRows: Int?
    /// The command tag, e.g. `INSERT 0 1` or `SELECT 3`.
    public let commandTag: String
    let storage: [UInt8]
    /// Per cell: start offset in `storage` and length, or length -1 for NULL; row-major.
    let cells: [(start: Int, length: Int)]
    let rowCount: Int

    init(columns: [Column], storage: [UInt8], cells: [(start: Int, length: Int)], rowCount: Int, commandTag: String) {
        self.columns = columns
        self.storage = storage
        self.cells = cells
        self.rowCount = rowCount
        self.commandTag = commandTag
        self.affectedRows = commandTag.split(separator: " ").last.flatMap { Int($0) }
    }

    static func empty(commandTag: String) -> PostgresRows {
        PostgresRows(columns: [], storage: [], cells: [], rowCount: 0, commandTag: commandTag)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { rowCount }
    public subscript(position: Int) -> PostgresRow { PostgresRow(rows: self, row: position) }

    /// The first row, or an error naming the query shape when there is none.
    public func single() throws -> PostgresRow {
        guard let row = first else {
            throw PostgresError(code: .unexpectedResponse, message: "expected a row, the query returned none")
        }
        return row
    }

    /// Index of a column by name.
    public func columnIndex(_ name: String) -> Int? { columns.firstIndex { $0.name == name } }
}

/// One row of a `PostgresRows`; decode cells by position or column name.
public struct PostgresRow: Sendable {
    let rows: PostgresRows
    let row: Int

    public var columnCount: Int { rows.columns.count }

    /// The raw cell, for decoders.
    public func cell(_ column: Int) -> PostgresCell {
        precondition(column >= 0 && column < rows.columns.count, "column \(column) out of range")
        let (start, length) = rows.cells[row * rows.columns.count + column]
        return PostgresCell(
            bytes: length < 0 ? nil : rows.storage[start..<start + length],
            typeOID: rows.columns[column].typeOID,
            columnName: rows.columns[column].name
        )
    }

    /// Decodes the cell at `column` as `T` (use an Optional type for nullable columns).
    public func decode<T: PostgresDecodable>(_ type: T.Type = T.self, at column: Int) throws -> T {
        guard column >= 0, column < rows.columns.count else {
            throw PostgresError(
                code: .decoding, message: "column \(column) out of range: the row has \(rows.columns.count)")
        }
        return try T.decode(from: cell(column))
    }

    /// Decodes the cell of the named column as `T`.
    public func decode<T: PostgresDecodable>(_ type: T.Type = T.self, column name: String) throws -> T {
        guard let index = rows.columnIndex(name) else {
            throw PostgresError(code: .decoding, message: "no column named \(name) in the result")
        }
        return try T.decode(from: cell(index))
    }

    /// Decodes the first columns, in order, as a tuple: `let (id, nick) = try row.decode((Int, String).self)`.
    public func decode<each T: PostgresDecodable>(_ types: (repeat each T).Type) throws -> (repeat each T) {
        var column = 0
        func next<Value: PostgresDecodable>(_: Value.Type) throws -> Value {
            defer { column += 1 }
            return try decode(Value.self, at: column)
        }
        return (repeat try next((each T).self))
    }
}

/// One cell: its bytes (nil for NULL), type and column name.
public struct PostgresCell: Sendable {
    public let bytes: ArraySlice<UInt8>?
    public let typeOID: UInt32
    public let columnName: String

    public init(bytes: ArraySlice<UInt8>?, typeOID: UInt32, columnName: String) {
        self.bytes = bytes
        self.typeOID = typeOID
        self.columnName = columnName
    }

    /// The bytes, or a clear error when the cell is NULL and `T` is not optional.
    func require<T>(_: T.Type) throws -> ArraySlice<UInt8> {
        guard let bytes else {
            throw PostgresError(
                code: .decoding, message: "column \(columnName) is NULL; decode it as \(T.self)? to accept NULL")
        }
        return bytes
    }

    func mismatch<T>(_: T.Type) -> PostgresError {
        PostgresError(
            code: .decoding,
            message: "column \(columnName) is \(PostgresType.describe(typeOID)), which does not decode as \(T.self)"
        )
    }

    func invalid<T>(_: T.Type) -> PostgresError {
        let text = bytes.map { String(decoding: $0.prefix(64), as: UTF8.self) } ?? "NULL"
        return PostgresError(code: .decoding, message: "column \(columnName): cannot read \(T.self) from \"\(text)\"")
    }
}
