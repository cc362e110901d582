import Foundation
import PostgresNIO

/// myinfo's one read, as a postgres-nio prepared statement: parsed once per connection, then only
/// bound and executed (issue 30 measures our server against this).
struct MyinfoStatement: PostgresPreparedStatement {
    typealias Row = (String, Int, Int, StoredTimestamp, [Int], [Int], [String])

    /// Our server's statement, copied from `LedgerStore.accountSummary` (Sources/Ledger/Store/LedgerStore.swift)
    /// with its one parameter as libpq sends it. LoadBench passes the text it reads back from our own
    /// read instead (`--statement-file`), so a change there is measured on both sides.
    static let builtIn = """
        SELECT u.profile, u.equipped_face, u.equipped_background, u.registered_at,
               ARRAY(SELECT g.item_index FROM grants g
                     WHERE g.uid = u.uid AND g.item_kind = 'face' AND g.owned ORDER BY g.item_index),
               ARRAY(SELECT g.item_index FROM grants g
                     WHERE g.uid = u.uid AND g.item_kind = 'background' AND g.owned ORDER BY g.item_index),
               -- ::text: an array of a domain (migration 0007) has the domain's array type.
               ARRAY(SELECT p.transaction_id::text FROM purchases p WHERE p.uid = u.uid
                     ORDER BY p.purchased_at, p.transaction_id)
        FROM users u WHERE u.uid = $1::text
        """

    /// The text prepared on every connection. Set once by `main` before the server starts and only
    /// read afterwards (the protocol wants it static).
    nonisolated(unsafe) static var text = builtIn

    static var sql: String { text }
    static var name: String { "myinfo_peer" }
    static var bindingDataTypes: [PostgresDataType] { [.text] }

    let uid: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(uid)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}

/// A `timestamptz` turned into a `Date` by the very arithmetic our libpq layer uses
/// (`PostgresTimestamp.parse`: whole seconds since 1970 plus microseconds / 10⁶), so the document's
/// `createdAt` cannot differ from ours in its last millisecond digit through a rounding of its own.
struct StoredTimestamp: PostgresDecodable {
    let date: Date

    init<JSONDecoder: PostgresJSONDecoder>(
        from buffer: inout ByteBuffer, type: PostgresDataType, format: PostgresFormat,
        context: PostgresDecodingContext<JSONDecoder>
    ) throws {
        guard type == .timestamptz, format == .binary, buffer.readableBytes == 8,
            let sincePostgresEpoch = buffer.readInteger(as: Int64.self)
        else { throw PostgresDecodingError.Code.typeMismatch }
        // 2000-01-01 00:00:00 UTC, PostgreSQL's epoch, in microseconds since 1970.
        let micros = sincePostgresEpoch.addingReportingOverflow(946_684_800_000_000)
        guard !micros.overflow else { throw PostgresDecodingError.Code.failure }
        var seconds = micros.partialValue / 1_000_000
        var fraction = micros.partialValue % 1_000_000
        if fraction < 0 {
            fraction += 1_000_000
            seconds -= 1
        }
        date = Date(timeIntervalSince1970: Double(seconds) + Double(fraction) / 1_000_000)
    }
}
