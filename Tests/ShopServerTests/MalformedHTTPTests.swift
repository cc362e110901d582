import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import TestSupport
import Testing

@testable import ShopServer

/// What anyone can send is answered as the client's mistake: a body whose HTTP framing is broken is a
/// 400, logged below `error`, so that nobody can fill the error log (and page the operator) with it.
@Suite("Malformed HTTP")
struct MalformedHTTPTests {
    @Test(
        "a malformed chunk size is a 400, and no line at error level", arguments: ["ZZZ", "-1", "fffffffffffffffffff"])
    func malformedChunkSize(size: String) async throws {
        let log = LogRecorder()
        try await withTestDatabase { db in
            let app = try buildApplication(
                configuration: ServerTest.configuration(), client: db.client, logger: log.logger)
            try await app.test(.live) { client in
                let port = try #require(client.port)
                let request =
                    "POST /api/v1/notifications/app-store HTTP/1.1\r\nHost: shop\r\nContent-Type: application/json\r\n"
                    + "Transfer-Encoding: chunked\r\n\r\n\(size)\r\n{}\r\n0\r\n\r\n"
                let answer = try await RawHTTP.exchange(port: port, request)
                #expect(answer.hasPrefix("HTTP/1.1 400"), "\(answer)")
            }
        }
        let errors = log.entries.filter { $0.level >= .error }
        #expect(errors.isEmpty, "\(errors.map(\.line))")
    }
}
