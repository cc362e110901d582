import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Postgres
import Receipts
import TestSupport
import Testing

@testable import ShopServer

@Suite("Live server on a real socket")
struct LiveServerTests {
    @Test("sign up, buy and read back over TCP; headers as a proxy sees them")
    func live() async throws {
        try await withTestDatabase { db in
            let app = try buildApplication(
                configuration: ServerTest.configuration(), client: db.client, logger: ServerTest.quietLogger)
            try await app.test(.live) { client in
                try await client.signUp("live")
                let receipt = ServerTest.stubReceipt(product(.background(1)))
                let bought = try await client.sesac(
                    .post, "/v1/user/shop/ios", uid: "live",
                    form: [("receipt", receipt), ("product", product(.background(1)))])
                #expect(bought.status == .ok)
                #expect(bought.headers[.contentType] == "application/json; charset=utf-8")
                #expect(bought.headers[.server] == "shopledger")
                #expect(bought.headers[HTTPField.Name("x-request-id")!]?.isEmpty == false)
                let info = try await client.sesac(.get, "/v1/user/shop/myinfo", uid: "live").decode(
                    ClientUserDocument.self)
                #expect(info.backgroundCollection == [0, 1])
                let oversized = try await client.send(
                    .post, "/api/v1/purchases",
                    headers: [.authorization: "Bearer dev:live", .contentType: "application/json"],
                    body: Array(repeating: UInt8(ascii: " "), count: 65 * 1024))
                #expect(oversized.status == .contentTooLarge && oversized.errorCode == "body_too_large")
            }
        }
    }
}
