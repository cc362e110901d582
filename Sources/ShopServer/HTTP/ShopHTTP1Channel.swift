import HummingbirdCore
import Logging
import NIOCore
import Synchronization

/// Hummingbird's HTTP/1 child channel, with one addition: a connection the server accepted but never
/// handled is closed when it is dropped.
///
/// NIO hands each accepted connection (an `NIOAsyncChannel`) to the server's accept loop through a
/// buffer. When the server stops while connections wait there (its task cancelled, or the listening
/// channel closed while a connection's setup was finishing), NIO drops them, and an `NIOAsyncChannel`
/// whose writer was never finished traps on deinit ("Deinited NIOAsyncWriter without calling
/// finish()"), ending the process (`ServerStopTests`). Here each waits in a ``Connection`` that, dropped
/// before it was handled, finishes the writer and closes the connection.
struct ShopHTTP1Channel: ServerChildChannel {
    let http1: HTTP1Channel

    /// An accepted connection on its way to the accept loop.
    final class Connection: ServerChildChannelValue {
        private let asyncChannel: HTTP1Channel.Value
        private let handled = Atomic(false)

        init(_ asyncChannel: HTTP1Channel.Value) {
            self.asyncChannel = asyncChannel
        }

        var channel: any Channel { asyncChannel.channel }

        /// The connection, for the server to handle (it then finishes the writer and closes).
        func take() -> HTTP1Channel.Value {
            handled.store(true, ordering: .releasing)
            return asyncChannel
        }

        deinit {
            guard !handled.load(ordering: .acquiring) else { return }
            (self as any OutboundFinishing).finishOutbound()
            asyncChannel.channel.close(promise: nil)
        }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Connection> {
        http1.setup(channel: channel, logger: logger).map { Connection($0) }
    }

    func handle(value: Connection, logger: Logger) async {
        await http1.handle(value: value.take(), logger: logger)
    }
}

/// Finishing an `NIOAsyncChannel`'s writer outside `executeThenClose`, which a connection dropped
/// unhandled never reaches. NIO deprecates the `outbound` property for everything else (use
/// `executeThenClose`); the requirement keeps that warning to this one, deliberate use.
private protocol OutboundFinishing {
    func finishOutbound()
}

extension ShopHTTP1Channel.Connection: OutboundFinishing {
    @available(*, deprecated, message: "only for a connection dropped before it was handled")
    fileprivate func finishOutbound() { asyncChannel.outbound.finish() }
}
