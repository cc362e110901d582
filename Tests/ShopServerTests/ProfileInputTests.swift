import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Postgres
import ShopServer
import TestSupport
import Testing

/// Found by schemathesis (scripts/fuzz-openapi.sh): a sign-up profile with `\u0000` in a string is valid
/// JSON that PostgreSQL's jsonb refuses (22P05), which used to surface as a 500.
@Suite("Sign-up profiles PostgreSQL cannot store")
struct ProfileInputTests {
    @Test(
        "a profile with U+0000 in a value or a key is a 400 invalid_json, and nothing is written",
        arguments: [#"{"nick": "a\u0000b"}"#, #"{"a\u0000": 1}"#, #"{"deep": [{"x": ["\u0000"]}]}"#])
    func nulInProfile(body: String) async throws {
        try await withShopServer { client, db in
            let before = try await ledgerRowCounts(db.client)
            let answer = try await client.send(
                .post, "/api/v1/me", headers: [.authorization: "Bearer dev:nul", .contentType: "application/json"],
                body: Array(body.utf8))
            #expect(
                answer.status == .badRequest && answer.errorCode == "invalid_json", "\(answer.status) \(answer.body)")
            #expect(try await ledgerRowCounts(db.client) == before)
            // The same text spelled as an escaped backslash is an ordinary string and is kept.
            let harmless = try await client.send(
                .post, "/api/v1/me", headers: [.authorization: "Bearer dev:nul", .contentType: "application/json"],
                body: Array(#"{"nick": "a\\u0000b"}"#.utf8))
            #expect(harmless.status == .created, "\(harmless.body)")
        }
    }
}
