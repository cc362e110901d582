import Foundation
import Postgres
import TestSupport
import Testing

@Suite("Bindings and decoding")
struct BindingTests {
    @Test("every supported type round-trips through a real table, NULL included")
    func roundTrips() async throws {
        try await withTestDatabase { db in
            try await db.client.query(
                """
                CREATE TABLE everything (
                    i16 int2, i32 int4, i64 int8, flag bool, label text, ratio float8, at timestamptz,
                    id uuid, blob bytea, doc jsonb, ints int8[], small int4[], words text[]
                )
                """)
            let at = Date(timeIntervalSince1970: 1_700_000_000.123456)
            let id = UUID()
            let blob = Data((0...255).map { UInt8($0) } + [0, 0, 92, 120])
            try await db.client.query(
                """
                INSERT INTO everything VALUES (
                    \(Int16.min), \(Int32.max), \(Int64.min), \(true), \("새싹 🌱 \"quoted\" \\ back"), \(-1.25e-7),
                    \(at), \(id), \(blob), \(PostgresJSON(#"{"a": [1, "둘"]}"#)), \([Int.max, 0, -1]), \([Int32(7)]),
                    \(["a b", "\"q\"", "back\\slash", "", "NULL", "콤마,"])
                )
                """)
            let row = try await db.client.query("SELECT * FROM everything").single()
            #expect(try row.decode(Int16.self, at: 0) == Int16.min)
            #expect(try row.decode(Int32.self, at: 1) == Int32.max)
            #expect(try row.decode(Int64.self, at: 2) == Int64.min)
            #expect(try row.decode(Bool.self, at: 3) == true)
            #expect(try row.decode(String.self, at: 4) == "새싹 🌱 \"quoted\" \\ back")
            #expect(try row.decode(Double.self, at: 5) == -1.25e-7)
            let decodedAt = try row.decode(Date.self, at: 6)
            #expect(abs(decodedAt.timeIntervalSince1970 - at.timeIntervalSince1970) < 0.000_001)
            #expect(try row.decode(UUID.self, at: 7) == id)
            #expect(try row.decode(Data.self, at: 8) == blob)
            let json = try row.decode(PostgresJSON.self, at: 9)
            #expect(try json.decode([String: [JSONValue]].self) == ["a": [.number(1), .string("둘")]])
            #expect(try row.decode([Int].self, at: 10) == [Int.max, 0, -1])
            #expect(try row.decode([Int32].self, at: 11) == [7])
            #expect(try row.decode([String].self, at: 12) == ["a b", "\"q\"", "back\\slash", "", "NULL", "콤마,"])

            try await db.client.query("DELETE FROM everything")
            let none: Int? = nil
            try await db.client.query(
                "INSERT INTO everything (i64, label, at, id, blob, ints) VALUES (\(none), \(String?.none), \(Date?.none), \(UUID?.none), \(Data?.none), \([Int]?.none))"
            )
            let nulls = try await db.client.query("SELECT i64, label, at, id, blob, ints FROM everything").single()
            let decoded = try nulls.decode((Int?, String?, Date?, UUID?, Data?, [Int]?).self)
            #expect(
                decoded.0 == nil && decoded.1 == nil && decoded.2 == nil && decoded.3 == nil && decoded.4 == nil
                    && decoded.5 == nil)
            #expect(throws: PostgresError.self) { try nulls.decode(Int.self, at: 0) }
        }
    }

    @Test("empty, non-ASCII and 1 MiB text and bytes come back unchanged")
    func sizesAndScripts() async throws {
        try await withTestDatabase { db in
            try await db.client.query("CREATE TABLE blobs (label text, data bytea)")
            let big = String(repeating: "가나다라마바사아자차카타파하 ", count: 1024 * 1024 / 42 + 1)
            let bigBytes = Data((0..<(1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            for (label, data) in [("", Data()), ("ÀÉÎõü — 新芽 — 🌱", Data([0])), (big, bigBytes)] {
                try await db.client.query("INSERT INTO blobs VALUES (\(label), \(data))")
                let row = try await db.client.query(
                    "SELECT label, data, octet_length(label) FROM blobs WHERE label = \(label)"
                ).single()
                #expect(try row.decode(String.self, at: 0) == label)
                #expect(try row.decode(Data.self, at: 1) == data)
                #expect(try row.decode(Int.self, at: 2) == label.utf8.count)
            }
            #expect(big.utf8.count > 1024 * 1024)
        }
    }

    @Test("injection strings are stored verbatim, never executed")
    func injection() async throws {
        try await withTestDatabase { db in
            try await db.client.query("CREATE TABLE notes (body text)")
            let attacks = [
                "'; DROP TABLE notes; --", "\"; DROP TABLE notes; --", "$1", "' OR '1'='1",
                "\\'; SELECT pg_sleep(5); --",
                "Robert'); DROP TABLE students;--", "$$ LANGUAGE plpgsql $$", "E'\\x00'",
            ]
            for attack in attacks {
                try await db.client.query("INSERT INTO notes VALUES (\(attack))")
            }
            let stored = try await db.client.query("SELECT body FROM notes").map { try $0.decode(String.self, at: 0) }
            #expect(stored.sorted() == attacks.sorted())
            // A quoted identifier cannot break out either.
            let rows = try await db.client.query("SELECT 1 AS \(identifier: "x\"; DROP TABLE notes; --")")
            #expect(rows.columns.first?.name == "x\"; DROP TABLE notes; --")
            #expect(
                try await db.client.query("SELECT count(*) FROM notes").single().decode(Int.self, at: 0)
                    == attacks.count)
        }
    }

    @Test("a NUL character in text is refused before it is sent, not silently truncated")
    func nulInText() async throws {
        try await withTestDatabase { db in
            try await db.client.query("CREATE TABLE notes (body text)")
            await #expect(throws: PostgresError.self) {
                try await db.client.query("INSERT INTO notes VALUES (\("a\u{0}b"))")
            }
            #expect(try await db.client.query("SELECT count(*) FROM notes").single().decode(Int.self, at: 0) == 0)
        }
    }

    @Test("decoding into the wrong type is a clear error naming the column and types")
    func wrongTypeDecode() async throws {
        try await withTestDatabase { db in
            let row = try await db.client.query("SELECT 42 AS answer, 'text' AS word, 1.5::numeric AS fraction")
                .single()
            let error = try #require(throws: PostgresError.self) { try row.decode(String.self, at: 0) }
            #expect(error.code == .decoding)
            #expect(
                error.message.contains("answer") && error.message.contains("int4") && error.message.contains("String"))
            #expect(throws: PostgresError.self) { try row.decode(Int.self, column: "word") }
            #expect(throws: PostgresError.self) { try row.decode(Int.self, column: "fraction") }
            #expect(throws: PostgresError.self) { try row.decode(Int16.self, at: 5) }
            #expect(try row.decode(Double.self, column: "fraction") == 1.5)
            let sum = try await db.client.query(
                "SELECT sum(x) FROM (VALUES (9223372036854775807::int8), (-1::int8)) v(x)"
            ).single()
            #expect(try sum.decode(Int64.self, at: 0) == Int64.max - 1)
        }
    }
}

/// A minimal JSON value for comparing decoded documents.
enum JSONValue: Codable, Equatable {
    case number(Double)
    case string(String)

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .number(let number): try container.encode(number)
        case .string(let string): try container.encode(string)
        }
    }
}
