import Foundation
import Hummingbird
import TestSupport
import Testing

@testable import ShopServer

#if canImport(Glibc)
import Glibc
#endif

/// What HTTP cannot even parse never reaches the router: the request head over the limit, a broken
/// request line. It still gets an answer a client and an operator can use: a status that says why, a
/// JSON error body, a request id, and a log line with that id. Serialized: two in-process servers
/// cancelled at the same moment each took 30 s to stop (seen here, not explained), one at a time 10 ms.
@Suite("Requests HTTP cannot parse", .serialized)
struct MalformedRequestTests {
    /// Writes `bytes` on a fresh connection to 127.0.0.1:`port` and reads until the server closes it (at
    /// most `timeout`): the whole answer. On a thread of its own: blocking in `recv` on one of the
    /// concurrency pool's threads (two on this machine) starves the in-process server that must answer.
    static func exchange(_ bytes: [UInt8], port: Int, timeout: Int = 10) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result { try blockingExchange(bytes, port: port, timeout: timeout) })
            }.start()
        }
    }

    private static func blockingExchange(_ bytes: [UInt8], port: Int, timeout: Int) throws -> String {
        guard let fd = connectLoopback(port: port) else { throw POSIXError(.ECONNREFUSED) }
        defer { close(fd) }
        var wait = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        // The server may answer and close before it has read everything: a failed write is no failure here.
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            answer += buffer[0..<count]
        }
        return String(decoding: answer, as: UTF8.self)
    }

    static func withLiveServer(_ body: @escaping @Sendable (Int, LogRecorder) async throws -> Void) async throws {
        try await withTestDatabase { db in
            var configuration = ServerTest.configuration()
            configuration.host = "127.0.0.1"
            configuration.port = try TestCluster.freePort()
            let logs = LogRecorder()
            let app = try buildApplication(configuration: configuration, client: db.client, logger: logs.logger)
            let server = Task { try await app.runService() }
            do {
                try await WebhookReceiver.waitUntilListening(port: configuration.port)
                try await body(configuration.port, logs)
            } catch {
                server.cancel()
                _ = try? await server.value
                throw error
            }
            server.cancel()
            _ = try? await server.value
        }
    }

    /// The answer's status line, its `x-request-id` and its body.
    static func parts(_ answer: String) -> (status: String, requestId: String?, body: String) {
        let sections = answer.components(separatedBy: "\r\n\r\n")
        let head = sections.first?.components(separatedBy: "\r\n") ?? []
        let id = head.first { $0.lowercased().hasPrefix("x-request-id:") }.map {
            $0.dropFirst("x-request-id:".count).trimmingCharacters(in: .whitespaces)
        }
        return (head.first ?? "", id, sections.dropFirst().joined(separator: "\r\n\r\n"))
    }

    @Test("a 27 KB request head: 431 with a JSON error, a request id, and a log line naming it")
    func headTooLarge() async throws {
        try await Self.withLiveServer { port, logs in
            let cookie = String(repeating: "a", count: 27 * 1024)
            let request = "GET /api/v1/catalog HTTP/1.1\r\nHost: shop\r\nCookie: c=\(cookie)\r\n\r\n"
            let answer = try await Self.exchange(Array(request.utf8), port: port)
            let (status, id, body) = Self.parts(answer)
            #expect(status == "HTTP/1.1 431 Request Header Fields Too Large", "\(answer.prefix(300))")
            let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
            let error = object?["error"] as? [String: Any]
            #expect(error?["code"] as? String == "request_header_fields_too_large", "\(body)")
            let requestId = try #require(id, "an x-request-id header: \(answer.prefix(300))")
            #expect(
                await logs.waitFor("hb.request.id=\(requestId)", within: .seconds(10)),
                "a log line with the request id, keyed as every request line: \(logs.messages.suffix(5))")
            let line = logs.messages.first { $0.contains("hb.request.id=\(requestId)") } ?? ""
            #expect(line.contains("status=431"), "\(line)")
            // The server goes on serving.
            let next = try await Self.exchange(
                Array("GET /livez HTTP/1.1\r\nHost: shop\r\nConnection: close\r\n\r\n".utf8), port: port)
            #expect(next.hasPrefix("HTTP/1.1 200"), "\(next.prefix(200))")
        }
    }

    @Test("a request line that is not HTTP: 400 malformed_http with a request id and a log line")
    func brokenRequestLine() async throws {
        try await Self.withLiveServer { port, logs in
            let answer = try await Self.exchange(Array("GET /x HTTP/9\u{1}\r\n\r\n".utf8), port: port)
            let (status, id, body) = Self.parts(answer)
            #expect(status == "HTTP/1.1 400 Bad Request", "\(answer.prefix(300))")
            let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
            #expect((object?["error"] as? [String: Any])?["code"] as? String == "malformed_http", "\(body)")
            let requestId = try #require(id, "an x-request-id header: \(answer.prefix(300))")
            #expect(
                await logs.waitFor("hb.request.id=\(requestId)", within: .seconds(10)), "\(logs.messages.suffix(5))")
        }
    }
}
