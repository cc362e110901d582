import NIOCore
import NIOHTTPTypes
import Synchronization

/// The server's open connections, shared by every connection's ``ConnectionLimitHandler``: at most
/// `maximum` open, the one waiting longest shed for a newcomer, a newcomer refused only when all are
/// busy (``ConnectionTable``).
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
    func responseFinished(_ id: UInt64) { table.withLock { $0.responseFinished(id) } }
    func closed(_ id: UInt64) { table.withLock { $0.closed(id) } }

    /// Open and busy connections now (for `/metrics`).
    var counts: (open: Int, busy: Int) { table.withLock { ($0.openCount, $0.busyCount) } }
}

/// One connection's link to the ``ConnectionLimiter``: registers it when it opens, marks it busy when
/// a request's head arrives and waiting again once the response is written, and removes it when it
/// closes. Sits after the HTTP codec, so it sees whole request heads and response ends.
final class ConnectionLimitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let limiter: ConnectionLimiter
    private var id: UInt64?
    private var registered = false

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
        if let id, case .head = unwrapInboundIn(data) { limiter.requestStarted(id) }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if let id, case .end = unwrapOutboundIn(data) { limiter.responseFinished(id) }
        context.write(data, promise: promise)
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
