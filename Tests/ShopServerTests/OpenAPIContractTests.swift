import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Postgres
import Receipts
import TestSupport
import Testing
import Yams

@testable import ShopServer

@Suite("OpenAPI document")
struct OpenAPIContractTests {
    static let documentURL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/openapi.yaml")

    struct Operation {
        let method: HTTPRequest.Method
        let path: String
        let statuses: Set<Int>
        let security: String?
        let hasBody: Bool
    }

    static func operations() throws -> [Operation] {
        let text = try String(contentsOf: documentURL, encoding: .utf8)
        let document = try #require(try Yams.load(yaml: text) as? [String: Any])
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: Any])
        var operations: [Operation] = []
        for (path, item) in paths {
            for (method, value) in try #require(item as? [String: Any]) {
                let operation = try #require(value as? [String: Any])
                let responses = try #require(operation["responses"] as? [String: Any])
                let security = (operation["security"] as? [[String: Any]])?.first?.keys.first
                operations.append(
                    Operation(
                        method: HTTPRequest.Method(method.uppercased())!, path: path,
                        statuses: Set(responses.keys.compactMap { Int($0) }), security: security,
                        hasBody: operation["requestBody"] != nil))
            }
        }
        return operations.sorted { ($0.path, $0.method.rawValue) < ($1.path, $1.method.rawValue) }
    }

    @Test("the served document is the one in the repo")
    func served() async throws {
        let file = try String(contentsOf: Self.documentURL, encoding: .utf8)
        try await withShopServer { client, _ in
            let answer = try await client.send(.get, "/openapi.yaml")
            #expect(answer.status == .ok && answer.body == file)
        }
    }

    @Test("every operation it lists exists and answers with documented statuses, with and without credentials")
    func everyOperation() async throws {
        let operations = try Self.operations()
        #expect(operations.count >= 12)
        try await withShopServer { client, _ in
            try await client.signUp("doc-user")
            for operation in operations {
                let uri = operation.path.replacingOccurrences(of: "{uid}", with: "doc-user")
                var headers: HTTPFields = [:]
                switch operation.security {
                case "firebase": headers[.authorization] = "Bearer dev:doc-user"
                case "admin": headers[.authorization] = "Bearer \(ServerTest.adminToken)"
                default: break
                }
                var body: [UInt8]?
                if operation.hasBody {
                    headers[.contentType] = "application/json"
                    body = Array("{}".utf8)
                }
                let answer = try await client.send(operation.method, uri, headers: headers, body: body)
                let label = "\(operation.method) \(operation.path)"
                #expect(
                    answer.errorCode != "not_found" && answer.status != .methodNotAllowed, "\(label) does not exist")
                #expect(
                    operation.statuses.contains(answer.status.code),
                    "\(label) answered \(answer.status.code), documented \(operation.statuses.sorted())")
                if operation.security != nil {
                    let anonymous = try await client.send(operation.method, uri, headers: [:], body: nil)
                    #expect(
                        anonymous.status == .unauthorized && operation.statuses.contains(401),
                        "\(label) without credentials")
                }
            }
        }
    }
}
