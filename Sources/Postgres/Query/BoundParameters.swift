/// A query's bound values laid out the way libpq takes them: one contiguous buffer (text values
/// NUL-terminated) plus per-parameter offsets, lengths, formats and type OIDs. The pointer array
/// is built inside a single `withUnsafeBufferPointer` scope so every pointer stays valid for the
/// libpq call that reads it.
struct BoundParameters {
    private var buffer: [UInt8] = []
    /// Offset of each value in `buffer`; -1 for SQL NULL.
    private var offsets: [Int] = []
    private(set) var lengths: [Int32] = []
    private(set) var formats: [Int32] = []
    private(set) var types: [UInt32] = []

    var count: Int32 { Int32(types.count) }

    init(_ query: PostgresQuery) throws(PostgresError) {
        let binds = query.binds
        guard binds.count <= Int(UInt16.max) else {
            throw PostgresError(
                code: .invalidUsage, message: "\(binds.count) parameters; at most 65535 fit one statement",
                query: query.sql)
        }
        offsets.reserveCapacity(binds.count)
        lengths.reserveCapacity(binds.count)
        formats.reserveCapacity(binds.count)
        types.reserveCapacity(binds.count)
        for bind in binds {
            types.append(bind.oid)
            switch bind.value {
            case .null:
                offsets.append(-1)
                lengths.append(0)
                formats.append(0)
            case .text(let text):
                if text.utf8.contains(0) {
                    throw PostgresError(
                        code: .invalidUsage,
                        message: "a text parameter contains a NUL character, which PostgreSQL cannot store",
                        sqlState: .characterNotInRepertoire, query: query.sql)
                }
                offsets.append(buffer.count)
                buffer.append(contentsOf: text.utf8)
                buffer.append(0)
                lengths.append(0)
                formats.append(0)
            case .binary(let bytes):
                offsets.append(buffer.count)
                buffer.append(contentsOf: bytes)
                buffer.append(0)
                lengths.append(Int32(bytes.count))
                formats.append(1)
            }
        }
    }

    /// Calls `body` with the array of value pointers (nil for NULL), valid only inside `body`.
    func withValues<R>(_ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        buffer.withUnsafeBufferPointer { raw in
            let base = raw.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }
            let values: [UnsafePointer<CChar>?] = offsets.map { offset in
                offset < 0 ? nil : base.map { $0 + offset }
            }
            return body(values)
        }
    }
}
