import NIOCore
import NIOPosix
import Synchronization

/// An attacker's connections: each sends one request, reads the answer, and (when `repeating`) sends it
/// again, as fast as the server answers, from local source addresses taken in turn (127.0.0.0/8 is all
/// loopback, so one machine can be many clients). A connection the server closes is opened again while
/// a repeating flood runs. Answers are counted by status; 0 counts connections the server closed or refused.
///
/// NIO on one event loop thread: thousands of connections cost the test process little besides sockets.
final class RequestFlood: Sendable {
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let port: Int
    private let request: [UInt8]
    private let repeating: Bool
    private let counts = Mutex<[Int: Int]>([:])
    private let running = Atomic<Bool>(true)
    private let channels = Mutex<[any Channel]>([])

    private init(port: Int, request: [UInt8], repeating: Bool) {
        self.port = port
        self.request = request
        self.repeating = repeating
    }

    /// Opens `connections` connections to 127.0.0.1:`port` from `sources` in turn and starts sending.
    static func start(
        connections: Int, port: Int, request: String, sources: [String] = ["127.0.0.1"], repeating: Bool = true
    ) async throws -> RequestFlood {
        let flood = RequestFlood(port: port, request: Array(request.utf8), repeating: repeating)
        // All at once: connected one by one, the first would flood the loop the later ones connect on.
        let opening = (0..<connections).map { flood.open(from: sources[$0 % sources.count]) }
        for connection in opening { _ = try? await connection.get() }
        return flood
    }

    /// Answers so far, by status (0: a connection closed or refused).
    var answers: [Int: Int] { counts.withLock { $0 } }
    var answered: Int { counts.withLock { $0.filter { $0.key != 0 }.values.reduce(0, +) } }

    /// Stops sending, closes every connection, and returns the answers by status.
    func stop() async -> [Int: Int] {
        running.store(false, ordering: .releasing)
        let open = channels.withLock { channels in
            defer { channels = [] }
            return channels
        }
        for channel in open { try? await channel.close() }
        try? await group.shutdownGracefully()
        return answers
    }

    fileprivate var isRunning: Bool { running.load(ordering: .acquiring) }
    fileprivate var keepsSending: Bool { repeating && isRunning }

    fileprivate func count(_ status: Int) {
        counts.withLock { $0[status, default: 0] += 1 }
    }

    /// A connection the server closed, opened again while the flood runs.
    fileprivate func reconnect(from source: String) {
        guard isRunning else { return }
        _ = open(from: source)
    }

    private func open(from source: String) -> EventLoopFuture<any Channel> {
        let request = ByteBuffer(bytes: self.request)
        let bootstrap = ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        FloodHandler(flood: self, source: source, request: request))
                }
            }
        let connected: EventLoopFuture<any Channel>
        do {
            connected = try bootstrap.bind(to: SocketAddress(ipAddress: source, port: 0))
                .connect(host: "127.0.0.1", port: port)
        } catch {
            connected = group.any().makeFailedFuture(error)
        }
        connected.whenComplete { result in
            switch result {
            case .success(let channel): self.channels.withLock { $0.append(channel) }
            case .failure: self.count(0)
            }
        }
        return connected
    }
}

/// One flood connection: sends the request, reads one answer (head and `Content-Length` body), counts
/// its status, and sends again.
private final class FloodHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let flood: RequestFlood
    let source: String
    let request: ByteBuffer
    private var received = ByteBuffer()

    init(flood: RequestFlood, source: String, request: ByteBuffer) {
        self.flood = flood
        self.source = source
        self.request = request
    }

    func channelActive(context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(request), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        received.writeBuffer(&buffer)
        while let status = takeAnswer() {
            flood.count(status)
            if flood.keepsSending {
                context.writeAndFlush(wrapOutboundOut(request), promise: nil)
            } else {
                context.close(promise: nil)
                return
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // Closed by the server while the flood still sends on it: counted, and opened again.
        if flood.keepsSending {
            flood.count(0)
            flood.reconnect(from: source)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// The status of the first whole answer in `received`, which it then drops; nil until one is whole.
    private func takeAnswer() -> Int? {
        let view = received.readableBytesView
        guard let end = view.firstRange(of: Array("\r\n\r\n".utf8)) else { return nil }
        let head = String(decoding: view[view.startIndex..<end.lowerBound], as: UTF8.self).lowercased()
        var length = 0
        for line in head.split(separator: "\r\n") where line.hasPrefix("content-length:") {
            length = Int(line.dropFirst("content-length:".count).trimmingPrefix(" ")) ?? 0
        }
        let total = end.upperBound - view.startIndex + length
        guard received.readableBytes >= total else { return nil }
        received.moveReaderIndex(forwardBy: total)
        received.discardReadBytes()
        let statusText = head.split(separator: " ").dropFirst().first.map(String.init) ?? ""
        return Int(statusText) ?? -1
    }
}
