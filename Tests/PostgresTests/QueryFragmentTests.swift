import Postgres
import TestSupport
import Testing

@Suite("Query fragments: placeholders renumbered, values still bound")
struct QueryFragmentTests {
    @Test("a fragment's $n follow the outer query's, twice over, and the values travel in order")
    func renumbered() {
        let uid = "alice"
        let limit = 10
        let fragment: PostgresQuery = "f(\(uid)::text, \(limit)::integer, '$$x$$')"
        let query: PostgresQuery = "SELECT \(1)::integer, a.* FROM \(fragment) a JOIN \(fragment) b ON true"
        #expect(
            query.sql
                == "SELECT $1::integer, a.* FROM f($2::text, $3::integer, '$$x$$') a JOIN f($4::text, $5::integer, '$$x$$') b ON true"
        )
        #expect(query.binds.map(\.value) == [.text("1"), .text("alice"), .text("10"), .text("alice"), .text("10")])
    }

    @Test("a fragment against a real server binds what it says")
    func againstServer() async throws {
        try await withTestDatabase { db in
            let client = db.client
            let name = "bob"
            let fragment: PostgresQuery = "(SELECT \(name)::text AS n)"
            let row = try await client.query("SELECT \(7)::integer, x.n, y.n FROM \(fragment) x, \(fragment) y")
                .single()
            let (number, first, second) = try row.decode((Int, String, String).self)
            #expect(number == 7 && first == "bob" && second == "bob")
        }
    }
}
