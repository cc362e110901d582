import HTTPTypes
import NIOCore
import NIOHTTPTypes
import Synchronization

/// The server's open connections, shared by every connection's ``ConnectionLimitHandler``: at most
/// `maximum` open, the one whose client has been quiet longest (waiting for a request, or stalled in a
/// body) shed for a newcomer, a newcomer refused only when all are busy (``ConnectionTable``).
final class ConnectionLimiter: Sendable {
    private let table: Mutex<ConnectionTable<any Channel>>
    private let metrics: ShopMetrics

    init(maximum: Int, metrics: ShopMetrics) {
        self.table = Mutex(ConnectionTable(maximum: maximum))
        self.metrics = metrics
    }

    var maximum: Int { table.withLock { $0.maximum } }

    /// Admits `channel` (closing the connection it displaces), or closes it when every connection is busy.
    /// - Returns: its id, or nil when it was refused.
    func open(_ channel: any Channel) -> UInt64? {
        switch table.withLock({ $0.open(channel) }) {
        case .admitted(let id, let shed):
            if let shed {
                metrics.recordShedConnection("displaced")
                shed.close(promise: nil)
            }
            return id
        case .refused:
            metrics.recordShedConnection("refused")
            channel.close(promise: nil)
            return nil
        }
    }

    func requestStarted(_ id: UInt64) { table.withLock { $0.requestStarted(id) } }
    func bodyReceived(_ id: UInt64) { table.withLock { $0.bodyReceived(id) } }
    func requestEnded(_ id: UInt64) { table.withLock { $0.requestEnded(id) } }
    /// - Returns: true when the request's body is still arriving: close rather than read it.
    func responseFinished(_ id: UInt64) -> Bool { table.withLock { $0.responseFinished(id) } }
    func closed(_ id: UInt64) { table.withLock { $0.closed(id) } }

    /// Open connections, those receiving a request body and those busy with a whole request, now (for
    /// `/metrics`).
    var counts: (open: Int, receiving: Int, busy: Int) {
        table.withLock { ($0.openCount, $0.receivingCount, $0.busyCount) }
    }
}

/// One connection's link to the ``ConnectionLimiter``: registers it when it opens, tells it when a
/// request's head, each part of its body and its end arrive and when the response is written, and
/// removes it when it closes. Sits after the HTTP codec, so it sees whole request heads and response ends.
///
/// A response written before its request's body has all arrived (a timeout, a refusal, a body over the
/// limit) closes the connection, with `Connection: close` on the response: reading on would keep a
/// connection for a body nobody wants, at whatever pace its sender chooses.
final class ConnectionLimitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let limiter: ConnectionLimiter
    private var id: UInt64?
    private var registered = false
    /// The current request's end has arrived (true between requests).
    private var requestComplete = true

    init(limiter: ConnectionLimiter) {
        self.limiter = limiter
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { register(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        register(context)
        context.fireChannelActive()
    }

    private func register(_ context: ChannelHandlerContext) {
        guard !registered else { return }
        registered = true
        id = limiter.open(context.channel)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if let id {
            switch unwrapInboundIn(data) {
            case .head:
                requestComplete = false
                limiter.requestStarted(id)
            case .body: limiter.bodyReceived(id)
            case .end:
                requestComplete = true
                limiter.requestEnded(id)
            }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head) where !requestComplete:
            head.headerFields[.connection] = "close"
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .end:
            if let id, limiter.responseFinished(id) {
                context.writeAndFlush(data, promise: promise)
                context.close(promise: nil)
            } else {
                context.write(data, promise: promise)
            }
        default:
            context.write(data, promise: promise)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        release()
    }

    private func release() {
        if let id { limiter.closed(id) }
        id = nil
    }
}

@available(*, unavailable)
extension ConnectionLimitHandler: Sendable {}
