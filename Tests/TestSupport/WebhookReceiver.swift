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
public final class WebhookReceiver: Sendable {
    public enum Mode: Sendable, Equatable {
        case ok
        case status(Int)
        /// Answers 200 after this long (beyond the sender's timeout: the sender counts a failure).
        case slow(Duration)
        /// The first `count` requests answered as `.slow(wait)`, the rest as `.ok`: a receiver on a loaded
        /// machine, whose late answers the sender's at-least-once delivery repeats.
        case slowFirst(count: Int, wait: Duration)
        /// 302 to `location`.
        case redirect(String)
        /// 200 with this many bytes of body.
        case bigBody(Int)
    }

    public struct Delivery: Sendable {
        public let id: String
        public let type: String
        public let uid: String
        public let attempt: Int
        public let body: String
    }

    public let secret: String
    public let port: Int
    private let state: Mutex<State>

    private struct State {
        var mode: Mode = .ok
        public var deliveries: [Delivery] = []
        var requests = 0
        var slowAnswers = 0
        var badSignatures = 0
        public var paths: [String] = []
        var hosts: [String] = []
    }

    public init(secret: String, port: Int) {
        self.secret = secret
        self.port = port
        self.state = Mutex(State())
    }

    public var url: String { "http://127.0.0.1:\(port)/hooks" }
    public var deliveries: [Delivery] { state.withLock { $0.deliveries } }
    public var requests: Int { state.withLock { $0.requests } }
    public var badSignatures: Int { state.withLock { $0.badSignatures } }
    public var paths: [String] { state.withLock { $0.paths } }
    /// The `Host` of every request, as the sender wrote it.
    public var hosts: [String] { state.withLock { $0.hosts } }
    public func set(_ mode: Mode) { state.withLock { $0.mode = mode } }

    /// Serves on `port` until `body` returns (a receiver that is "down" is one not running).
    public func serving<R: Sendable>(_ body: () async throws -> R) async throws -> R {
        let router = Router()
        router.post("/hooks") { request, _ in try await self.answer(request, path: "/hooks") }
        router.post("/elsewhere") { request, _ in try await self.answer(request, path: "/elsewhere") }
        var logger = Logger(label: "webhook-receiver")
        logger.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            // On a thread of its own (see `OwnThreadExecutor`): answered late behind the tests beside it, a
            // delivery can time out after it was received and be sent again (one of 200 was counted twice in
            // a full run; that this was the way is likely, not shown).
            group.addTask(executorPreference: OwnThreadExecutor(label: "webhook-receiver")) {
                try await app.runService()
            }
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
            state.hosts.append(request.head.authority ?? "")
            guard case .slowFirst(let count, let wait) = state.mode else { return state.mode }
            guard state.slowAnswers < count else { return .ok }
            state.slowAnswers += 1
            return .slow(wait)
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
        case .ok, .slowFirst:
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

    /// The ids that arrived more than once whose repeats differ from their first arrival in any byte (a
    /// redelivery must be the same event, byte for byte): empty when every repeat was identical.
    public static func alteredRedeliveries(_ deliveries: [Delivery]) -> [String] {
        var first: [String: String] = [:]
        var altered: Set<String> = []
        for delivery in deliveries {
            if let body = first[delivery.id] {
                if body != delivery.body { altered.insert(delivery.id) }
            } else {
                first[delivery.id] = delivery.body
            }
        }
        return altered.sorted()
    }

    /// Users whose events first arrived out of event order (each id counted at its first arrival):
    /// empty when every user's events came in order.
    public static func outOfOrderUsers(_ deliveries: [Delivery]) -> [String] {
        var seen: Set<String> = []
        var last: [String: Int64] = [:]
        var broken: Set<String> = []
        for delivery in deliveries where seen.insert(delivery.id).inserted {
            let number = WebhookEvent.eventId(parsing: delivery.id) ?? 0
            if let previous = last[delivery.uid], previous > number { broken.insert(delivery.uid) }
            last[delivery.uid] = number
        }
        return broken.sorted()
    }

    public static func waitUntilListening(port: Int) async throws {
        let start = ContinuousClock.now
        while ContinuousClock.now - start < .seconds(10) {
            if let fd = connectLoopback(port: port) {
                close(fd)
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw ReceiverError("the receiver did not listen on \(port)")
    }
}

/// A TCP socket connected to 127.0.0.1:`port` (blocking), or nil when nothing accepts there.
public func connectLoopback(port: Int) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
    if connected { return fd }
    close(fd)
    return nil
}

public struct ReceiverError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
