import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import TestSupport
import Testing

@testable import ShopServer

/// `POST /api/v1/me` keeps an optional JSON object as the profile: a flat, small object, whose
/// sign-up fields (read back by the SeSAC user document) follow the sign-up form's rules.
@Suite("JSON sign-up profiles are checked")
struct JSONProfileTests {
    static var refused: [(String, Any)] {
        [
            ("nested object", ["nick": "민트", "extra": ["deep": ["deeper": 1]]] as [String: Any]),
            ("array value", ["tags": Array(repeating: "x", count: 50)]),
            ("too many keys", Dictionary(uniqueKeysWithValues: (0..<40).map { ("k\($0)", $0) })),
            ("a long string", ["bio": String(repeating: "a", count: 5000)]),
            ("nick with a right-to-left override", ["nick": "mint\u{202E}tnim"]),
            ("nick of the wrong type", ["nick": 5]),
            ("gender out of range", ["gender": 7]),
        ]
    }

    @Test(
        "nested, oversized or badly typed profiles are refused with 400 invalid_profile, nothing registered",
        arguments: Self.refused.indices)
    func refusedProfile(index: Int) async throws {
        let what = Self.refused[index].0
        try await withShopServer { client, _ in
            let answer = try await client.api(.post, "/api/v1/me", uid: "profile-\(index)", json: Self.refused[index].1)
            #expect(
                answer.status == .badRequest && answer.errorCode == "invalid_profile",
                "\(what): \(answer.status) \(answer.body)")
            #expect(
                try await client.api(.get, "/api/v1/me", uid: "profile-\(index)").status == .notFound,
                "\(what): not registered")
        }
    }

    @Test("no body, an empty object and the sign-up fields are accepted")
    func acceptedProfiles() async throws {
        try await withShopServer { client, _ in
            #expect(try await client.api(.post, "/api/v1/me", uid: "p-none").status == .created)
            let empty = try await client.api(.post, "/api/v1/me", uid: "p-empty", json: [String: Any]())
            #expect(empty.status == .created)
            let fields: [String: Any] = [
                "nick": "민트", "email": "mint@example.com", "gender": 1, "phoneNumber": "+821012345678",
                "FCMtoken": "fcm", "birth": "1994-11-05T08:15:30.000Z", "marketingOptIn": true,
            ]
            #expect(try await client.api(.post, "/api/v1/me", uid: "p-fields", json: fields).status == .created)
        }
    }
}

@Suite("Prices are bounded at ingest")
struct PriceBoundTests {
    @Test("a stub receipt priced beyond the ledger's bound is refused (422 invalid_input), nothing written")
    func hugePriceRefused() async throws {
        try await withShopServer { client, db in
            _ = try await client.api(.post, "/api/v1/me", uid: "rich")
            let before = try await ledgerRowCounts(db.client)
            for price in [Int64.max, Int64.max / 4, 1_000_000_000_000_001] {
                let receipt = ServerTest.stubReceipt(product(.face(1)), price: price)
                let answer = try await client.api(
                    .post, "/api/v1/purchases", uid: "rich", json: ["receipt": receipt, "productId": product(.face(1))])
                #expect(
                    answer.status == .unprocessableContent && answer.errorCode == "invalid_input",
                    "\(price): \(answer.body)")
            }
            #expect(try await ledgerRowCounts(db.client) == before)
            let fair = ServerTest.stubReceipt(product(.face(1)), price: 1_000_000_000_000_000)
            #expect(
                try await client.api(
                    .post, "/api/v1/purchases", uid: "rich", json: ["receipt": fair, "productId": product(.face(1))]
                ).status == .ok)
        }
    }
}
