import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization
import Webhooks

/// A real webhook receiver on loopback, as a customer would write one: it checks every request's
/// `ShopLedger-Signature` (rejecting a bad or old one with 400) and records each delivery it accepts.
/// Its behaviour can be switched while it runs: answer 200, answer 500, or answer late.
final class WebhookReceiver: Sendable {
    enum Mode: Sendable, Equatable {
        case ok
        case status(Int)
        /// Answers 200 after this long (beyond the sender's timeout: the sender counts a failure).
        case slow(Duration)
        /// 302 to `location`.
        case redirect(String)
        /// 200 with this many bytes of body.
        case bigBody(Int)
    }

    struct Delivery: Sendable {
        let id: String
        let type: String
        let uid: String
        let attempt: Int
        let body: String
    }

    let secret: String
    let port: Int
    private let state: Mutex<State>

    private struct State {
        var mode: Mode = .ok
        var deliveries: [Delivery] = []
        var requests = 0
        var badSignatures = 0
        var paths: [String] = []
    }

    init(secret: String, port: Int) {
        self.secret = secret
        self.port = port
        self.state = Mutex(State())
    }

    var url: String { "http://127.0.0.1:\(port)/hooks" }
    var deliveries: [Delivery] { state.withLock { $0.deliveries } }
    var requests: Int { state.withLock { $0.requests } }
    var badSignatures: Int { state.withLock { $0.badSignatures } }
    var paths: [String] { state.withLock { $0.paths } }
    func set(_ mode: Mode) { state.withLock { $0.mode = mode } }

    /// Serves on `port` until `body` returns (a receiver that is "down" is one not running).
    func serving<R: Sendable>(_ body: () async throws -> R) async throws -> R {
        let router = Router()
        router.post("/hooks") { request, _ in try await self.answer(request, path: "/hooks") }
        router.post("/elsewhere") { request, _ in try await self.answer(request, path: "/elsewhere") }
        var logger = Logger(label: "webhook-receiver")
        logger.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService() }
            defer { group.cancelAll() }
            try await Self.waitUntilListening(port: port)
            return try await body()
        }
    }

    private func answer(_ request: Request, path: String) async throws -> Response {
        let bytes = try await request.body.collect(upTo: 1 << 20)
        let body = String(buffer: bytes)
        let mode = state.withLock { state in
            state.requests += 1
            state.paths.append(path)
            return state.mode
        }
        let header = request.headers[HTTPField.Name(WebhookSignature.headerName)!] ?? ""
        let now = Int64(Date().timeIntervalSince1970)
        guard WebhookSignature.verify(header: header, body: Array(body.utf8), secret: secret, now: now) else {
            state.withLock { $0.badSignatures += 1 }
            return Response(status: .badRequest)
        }
        switch mode {
        case .status(let code):
            return Response(status: .init(code: code))
        case .slow(let wait):
            try? await Task.sleep(for: wait)
        case .redirect(let location):
            return Response(status: .found, headers: [.location: location])
        case .bigBody(let size):
            record(body, request)
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(repeating: UInt8(ascii: "x"), count: size)))
        case .ok:
            break
        }
        record(body, request)
        return Response(status: .noContent)
    }

    private func record(_ body: String, _ request: Request) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
            let id = object["id"] as? String, let type = object["type"] as? String,
            let data = object["data"] as? [String: Any], let uid = data["uid"] as? String
        else { return }
        let attempt = Int(request.headers[HTTPField.Name("ShopLedger-Delivery-Attempt")!] ?? "") ?? 0
        state.withLock {
            $0.deliveries.append(Delivery(id: id, type: type, uid: uid, attempt: attempt, body: body))
        }
    }

    /// A port nothing listens on now (bound and released).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw ReceiverError("could not find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func waitUntilListening(port: Int) async throws {
        let start = ContinuousClock.now
        while ContinuousClock.now - start < .seconds(10) {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            close(fd)
            if connected { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw ReceiverError("the receiver did not listen on \(port)")
    }
}

struct ReceiverError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
