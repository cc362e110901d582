import Foundation
import HTTPTypes
import HummingbirdTesting
import Ledger
import TestSupport
import Testing

@testable import ShopServer

/// One view per concept: the admin API's answer and the built binary's `--json` for the same object,
/// on the same database, are the same bytes (the command prints a newline after them). Each case
/// writes through both front ends first, so values and nulls both appear in what is compared.
@Suite("The command line prints what the API answers: webhook endpoints, the catalog, support actions")
struct ViewParityTests {
    static let admin = ServerTest.adminToken

    /// The command's standard output, which must have succeeded.
    static func json(_ arguments: [String]) async throws -> String {
        let run = try await ShopLedgerRun.run(arguments, separatingErrors: true)
        #expect(run.status == 0, "\(arguments): \(run.errors)")
        return run.output
    }

    /// The API's answer, which must be a 200 or 201.
    static func api(
        _ client: some TestClientProtocol, _ method: HTTPRequest.Method, _ path: String, json: Any? = nil
    ) async throws -> String {
        let answer = try await client.api(method, path, token: admin, json: json)
        #expect(answer.status == .ok || answer.status == .created, "\(path): \(answer.status) \(answer.body)")
        return answer.body
    }

    static func object(_ text: String) throws -> NSDictionary {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSDictionary, "\(text)")
    }

    @Test("webhooks list and add --json: GET and POST /api/v1/admin/webhooks, byte for byte")
    func webhookEndpoints() async throws {
        // No delivery worker: an attempt (to an address that does not answer) between the API's read and
        // the command's would change the endpoint's failures, and the two answers would differ.
        try await withShopServer(configure: {
            $0.auth.adminLabel = "ops-lee"
            $0.webhooks = nil
        }) { client, db in
            let database = ["--database-url", db.url]
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("views-\(UUID())").path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let secretFile = folder + "/secret"
            try "whsec_0123456789abcdef0123456789\n".write(toFile: secretFile, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secretFile)

            // One endpoint from the command line (every event type: `events` null), one over HTTP with
            // its own secret, then disabled (`disabledBy`, `disabledAt` set), and an event queued.
            let added = try await Self.json(
                ["webhooks", "add", "https://hooks.example.com/cli", "--secret-file", secretFile, "--json"]
                    + database)
            let posted = try await Self.api(
                client, .post, "/api/v1/admin/webhooks",
                json: [
                    "url": "https://hooks.example.com/http", "events": ["support.granted"],
                    "secret": "whsec_abcdefabcdefabcdefabcdefab",
                ])
            _ = try await Self.api(client, .post, "/api/v1/admin/webhooks/2/disable")
            try await client.signUp("hana")
            _ = try await Self.api(
                client, .post, "/api/v1/admin/grants",
                json: ["uid": "hana", "kind": "face", "index": 3, "reason": "outage"])

            let listed = try await Self.api(client, .get, "/api/v1/admin/webhooks")
            #expect(try await Self.json(["webhooks", "list", "--json"] + database) == listed + "\n")
            #expect(listed.contains(#""events" : null"#) && listed.contains(#""disabledBy" : "ops-lee""#), "\(listed)")
            #expect(listed.contains(#""url" : "https://hooks.example.com/cli""#), "slashes unescaped: \(listed)")
            #expect(listed.contains(#""failingSince" : null"#) && listed.contains(#""pending" : 1"#), "\(listed)")

            // `add --json` is POST's answer for a secret the caller gave: the endpoint and `"secret": null`.
            let endpoints = try #require(try Self.object(listed)["endpoints"] as? [NSDictionary])
            let cliAdded = try Self.object(added)
            #expect(cliAdded["secret"] is NSNull && !added.contains("whsec_"), "\(added)")
            #expect(cliAdded.removing("secret", "pending") == endpoints[0].removing("secret", "pending"))
            let httpAdded = try Self.object(posted)
            #expect(httpAdded["secret"] is NSNull, "a secret the caller gave is not echoed: \(posted)")
            #expect(Set(httpAdded.allKeys as? [String] ?? []) == Set(cliAdded.allKeys as? [String] ?? []))
        }
    }

    @Test("catalog list --json: GET /api/v1/admin/catalog byte for byte, and the public catalog's view")
    func catalog() async throws {
        try await withShopServer { client, db in
            _ = try await Self.api(
                client, .post, "/api/v1/admin/catalog",
                json: [
                    "kind": "background", "index": 8, "productId": "com.memolease.sesac1.background8",
                    "name": "눈 내린 마을", "nameEn": "Snowy village",
                    "price": ["amountMilli": 2_500_000, "currency": "KRW"],
                    "reason": "the winter collection",
                ])
            _ = try await Self.api(
                client, .post, "/api/v1/admin/catalog/face/1/retire", json: ["reason": "out of season"])

            let answered = try await Self.api(client, .get, "/api/v1/admin/catalog")
            #expect(try await Self.json(["catalog", "list", "--json", "--database-url", db.url]) == answered + "\n")
            #expect(answered.contains(#""productId" : null"#) && answered.contains(#""retiredAt" : null"#))
            #expect(answered.contains(#""nameEn" : "Snowy village""#), "\(answered)")
            #expect(answered.contains(#""retired" : true"#), "\(answered)")

            // The public catalog is the same view (in the router's compact encoding).
            let everyone = try await client.api(.get, "/api/v1/catalog")
            #expect(try Self.object(everyone.body) == Self.object(answered))
        }
    }

    @Test("admin lookup and history --json: GET /api/v1/admin/purchases and users/{uid}/history byte for byte")
    func supportActions() async throws {
        try await withShopServer { client, db in
            let database = ["--database-url", db.url]
            try await client.signUp("hana")
            let bought = try await client.api(
                .post, "/api/v1/purchases", uid: "hana",
                json: ["receipt": ServerTest.stubReceipt(product(.face(2)), transaction: "views-1")])
            #expect(bought.status == .ok || bought.status == .created, "\(bought.body)")
            // A grant over HTTP that names the purchase, taken back on the command line; one that stays.
            let granted = try Self.object(
                try await Self.api(
                    client, .post, "/api/v1/admin/grants",
                    json: [
                        "uid": "hana", "kind": "face", "index": 3, "reason": "charged twice",
                        "transactionId": "views-1",
                    ]))
            let grantId = try #require(granted["actionId"] as? Int)
            let revoked = try await ShopLedgerRun.run(
                ["admin", "revoke", "\(grantId)", "--actor", "support-park", "--reason", "refunded instead"] + database)
            #expect(revoked.status == 0, "\(revoked.output)")
            _ = try await Self.api(
                client, .post, "/api/v1/admin/grants",
                json: ["uid": "hana", "kind": "background", "index": 2, "reason": "goodwill"])

            let lookup = try await Self.api(client, .get, "/api/v1/admin/purchases/views-1")
            #expect(try await Self.json(["admin", "lookup", "views-1", "--json"] + database) == lookup + "\n")
            let record = try #require((try Self.object(lookup)["records"] as? [NSDictionary])?.first)
            let named = try #require((record["supportActions"] as? [NSDictionary])?.first, "\(lookup)")
            #expect(named["actionId"] as? Int == grantId && named["revokedBy"] is Int, "\(lookup)")

            let history = try await Self.api(client, .get, "/api/v1/admin/users/hana/history")
            #expect(try await Self.json(["admin", "history", "hana", "--json"] + database) == history + "\n")
            let actions = try #require(try Self.object(history)["supportActions"] as? [NSDictionary])
            #expect(actions.count == 3, "\(history)")
            #expect(actions.contains { $0["revokes"] as? Int == grantId && $0["transactionId"] is NSNull })
            #expect(actions.contains { $0["revokedBy"] is NSNull && $0["revokes"] is NSNull })
        }
    }
}

extension NSDictionary {
    /// A copy without `keys`.
    fileprivate func removing(_ keys: String...) -> NSDictionary {
        let copy = (mutableCopy() as? NSMutableDictionary) ?? NSMutableDictionary()
        copy.removeObjects(forKeys: keys)
        return copy
    }
}
