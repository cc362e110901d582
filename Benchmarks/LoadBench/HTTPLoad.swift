import BenchSupport
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// One request of a workload: method, path, headers and body, encoded once before the run.
struct LoadRequest: Sendable {
    let head: HTTPRequestHead
    let body: ByteBuffer?
}

/// What one run measured.
struct LoadResult: Sendable {
    var label: String
    var connections: Int
    var duration: Duration
    var completed = 0
    var errors = 0
    var statuses: [UInt: Int] = [:]
    var latenciesMicros: [UInt32] = []
    /// What the server, PostgreSQL and the load generator spent meanwhile (nil when not sampled).
    var cpu: RequestCPU?

    var requestsPerSecond: Double { Double(completed) / duration.seconds }

    /// Milliseconds; NaN when nothing completed.
    func percentile(_ p: Double) -> Double {
        BenchSupport.percentile(latenciesMicros.sorted(), p).map { Double($0) / 1000 } ?? .nan
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// A closed-loop HTTP/1.1 load generator on NIO: `connections` keep-alive connections, each sending its
/// next request as soon as the previous answer arrived, for `duration` or until `next` returns nil.
/// Requests come from `next` (called on the event loop, with a running index); give it a one-thread
/// event loop group so the generator takes at most one core.
enum HTTPLoad {
    static func run(
        label: String, host: String, port: Int, connections: Int, duration: Duration, group: any EventLoopGroup,
        expect: @escaping @Sendable (UInt) -> Bool = { $0 == 200 },
        next: @escaping @Sendable (Int) -> LoadRequest?
    ) async throws -> LoadResult {
        let loop = group.next()
        let counter = NIOLockedValueBox(0)
        let deadline = NIODeadline.now() + .nanoseconds(Int64(duration.seconds * 1e9))
        var workers: [Worker] = []
        for _ in 0..<connections {
            let handler = ResponseCollector()
            let channel = try await ClientBootstrap(group: loop)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.pipeline.addHTTPClientHandlers().flatMap { channel.pipeline.addHandler(handler) }
                }
                .connect(host: host, port: port).get()
            workers.append(Worker(channel: channel, collector: handler))
        }
        let started = ContinuousClock.now
        let finished = try await withThrowingTaskGroup(of: Worker.Tally.self) { tasks in
            for worker in workers {
                tasks.addTask {
                    try await worker.run(until: deadline, expect: expect) {
                        let index = counter.withLockedValue { value -> Int in
                            defer { value += 1 }
                            return value
                        }
                        return next(index)
                    }.get()
                }
            }
            var tallies: [Worker.Tally] = []
            for try await tally in tasks { tallies.append(tally) }
            return tallies
        }
        let elapsed = ContinuousClock.now - started
        for worker in workers { try? await worker.channel.close() }
        var result = LoadResult(label: label, connections: connections, duration: elapsed)
        for tally in finished {
            result.completed += tally.completed
            result.errors += tally.errors
            result.latenciesMicros += tally.latencies
            for (status, count) in tally.statuses { result.statuses[status, default: 0] += count }
        }
        return result
    }

    /// One connection's closed loop; all its state lives on its event loop.
    final class Worker: @unchecked Sendable {
        // @unchecked: after `init`, every property is read and written only on the channel's event loop
        // (`run` hops there; responses complete there).
        struct Tally: Sendable {
            var completed = 0
            var errors = 0
            var statuses: [UInt: Int] = [:]
            var latencies: [UInt32] = []
        }

        let channel: any Channel
        let collector: ResponseCollector
        private var tally = Tally()
        private var deadline = NIODeadline.now()
        private var expect: @Sendable (UInt) -> Bool = { _ in true }
        private var next: @Sendable () -> LoadRequest? = { nil }
        private var done: EventLoopPromise<Tally>?

        init(channel: any Channel, collector: ResponseCollector) {
            self.channel = channel
            self.collector = collector
        }

        func run(
            until deadline: NIODeadline, expect: @escaping @Sendable (UInt) -> Bool,
            next: @escaping @Sendable () -> LoadRequest?
        ) -> EventLoopFuture<Tally> {
            let promise = channel.eventLoop.makePromise(of: Tally.self)
            channel.eventLoop.execute {
                self.deadline = deadline
                self.expect = expect
                self.next = next
                self.done = promise
                self.tally.latencies.reserveCapacity(100_000)
                self.sendOne()
            }
            return promise.futureResult
        }

        private func sendOne() {
            guard NIODeadline.now() < deadline, let request = next() else {
                done?.succeed(tally)
                return
            }
            let start = NIODeadline.now()
            collector.expect(channel.eventLoop.makePromise(of: UInt.self)).whenComplete { result in
                switch result {
                case .success(let status):
                    let micros = (NIODeadline.now() - start).nanoseconds / 1000
                    self.tally.latencies.append(UInt32(clamping: micros))
                    self.tally.statuses[status, default: 0] += 1
                    if self.expect(status) { self.tally.completed += 1 } else { self.tally.errors += 1 }
                    self.sendOne()
                case .failure:
                    self.tally.errors += 1
                    self.done?.succeed(self.tally)
                }
            }
            channel.write(HTTPClientRequestPart.head(request.head), promise: nil)
            if let body = request.body { channel.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil) }
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        }
    }

    /// Completes the pending promise with the status of each full response.
    final class ResponseCollector: ChannelInboundHandler, @unchecked Sendable {
        // @unchecked: touched only on its channel's event loop.
        typealias InboundIn = HTTPClientResponsePart
        private var pending: EventLoopPromise<UInt>?
        private var status: UInt = 0

        func expect(_ promise: EventLoopPromise<UInt>) -> EventLoopFuture<UInt> {
            pending = promise
            return promise.futureResult
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): status = head.status.code
            case .body: break
            case .end:
                let promise = pending
                pending = nil
                promise?.succeed(status)
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            pending?.fail(error)
            pending = nil
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            pending?.fail(ChannelError.ioOnClosedChannel)
            pending = nil
        }
    }
}
