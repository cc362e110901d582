import BenchSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Postgres
import TestSupport

/// Issue 30's side-by-side: `GET /v1/user/shop/myinfo` on our server and on the myinfo peer
/// (Benchmarks/MyinfoPeer: Hummingbird 2 + postgres-nio, our exact statement prepared, the same JSON),
/// both on the same database, same readers, same seconds. At each level of `--connections`, three
/// rounds, each timing ours and then the peer; the ratio is ours/peer per round. Before anything is
/// timed the two answers must be equal byte for byte for several readers, a missing token and an
/// unregistered user, or the run stops.
struct PeerComparison {
    let binary: String
    let server: BenchServer
    let workloads: Workloads

    static let rounds = 3

    struct Round: Sendable {
        let connections: Int
        let round: Int
        let ours: LoadResult
        let peer: LoadResult
    }

    func run() async throws -> PeerReport {
        let options = workloads.options
        // The peer prepares the very text our libpq layer prepares (so a change of ours is measured on both).
        let statement = try await Ceiling.myinfoStatement(databaseURL: server.databaseURL)
        let statementFile = server.folder + "/myinfo-peer.sql"
        guard FileManager.default.createFile(atPath: statementFile, contents: Data(statement.utf8)) else {
            throw BenchError("could not write \(statementFile)")
        }
        let port = try TestCluster.freePort()
        progress("LoadBench: starting the myinfo peer \(binary) (pool \(options.poolSize)) on port \(port)")
        let pid = try ChildProcess.spawn(
            [
                binary, "--port", String(port), "--database-url", server.databaseURL, "--pool-size",
                String(options.poolSize), "--statement-file", statementFile,
            ], environment: nil, workingDirectory: "/tmp", output: server.folder + "/peer.log", append: false)
        let peer = ServerProcess(pid: pid)
        // Interrupted: the server's handler stops the cluster and exits; this one ends the peer first.
        let interrupted = [SIGINT, SIGTERM].map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { peer.terminate() }
            source.resume()
            return source
        }
        defer { interrupted.forEach { $0.cancel() } }
        do {
            try await waitUntilReady(peer, port: port)
            try await checkSameAnswers(peerPort: port)
            let rounds = try await measure(peerPort: port, peerPID: pid)
            peer.terminate()
            await peer.exited()
            return PeerReport(rounds: rounds)
        } catch {
            peer.terminate()
            await peer.exited()
            throw error
        }
    }

    private func waitUntilReady(_ peer: ServerProcess, port: Int) async throws {
        for _ in 0..<600 {
            // No token: 401 once it serves.
            if let status = try? await BenchServer.get(port: port, path: "/v1/user/shop/myinfo"), status == 401 {
                return
            }
            guard peer.isRunning else {
                throw BenchError("the myinfo peer exited at start; see \(server.folder)/peer.log")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw BenchError("the myinfo peer did not answer in 60 s; see \(server.folder)/peer.log")
    }

    /// Several readers' bodies equal byte for byte (and 200); a missing token (401) and an unregistered
    /// user (406) too.
    private func checkSameAnswers(peerPort: Int) async throws {
        let users = workloads.options.users
        let readers = Array(Set([0, 1, users / 2, users - 1])).sorted()
        var checks: [(String, LoadRequest, UInt)] = readers.map { reader in
            (
                "reader r\(reader)",
                Workloads.request(.GET, "/v1/user/shop/myinfo", token: "dev:r\(reader)", sesac: true), 200
            )
        }
        checks.append(
            (
                "no idtoken",
                LoadRequest(
                    head: HTTPRequestHead(
                        version: .http1_1, method: .GET, uri: "/v1/user/shop/myinfo", headers: ["host": "bench"]),
                    body: nil), 401
            ))
        checks.append(
            (
                "an unregistered user",
                Workloads.request(.GET, "/v1/user/shop/myinfo", token: "dev:peer-check-nobody", sesac: true), 406
            ))
        for (what, request, expected) in checks {
            let ours = try await OneResponse.fetch(request, port: server.port)
            let peer = try await OneResponse.fetch(request, port: peerPort)
            guard ours.status == expected, peer.status == expected else {
                throw BenchError(
                    "myinfo for \(what): expected \(expected) from both, ours answered \(ours.status), the peer \(peer.status)"
                )
            }
            guard ours.body == peer.body else {
                throw BenchError(
                    """
                    the myinfo peer's body differs from ours for \(what); nothing was timed.
                    ours: \(String(decoding: ours.body, as: UTF8.self))
                    peer: \(String(decoding: peer.body, as: UTF8.self))
                    """)
            }
        }
        progress(
            "LoadBench: the peer's myinfo bodies equal ours byte for byte (\(readers.count) readers, no token, unregistered)"
        )
    }

    private func measure(peerPort: Int, peerPID: pid_t) async throws -> [Round] {
        let options = workloads.options
        let requests = workloads.myinfoRequests
        let peerCPU = RequestCPU.Sampler(serverPID: peerPID, dataDirectory: server.folder + "/data")
        // Untimed: every connection of both pools opened and its statement prepared.
        let warmUp = Duration.milliseconds(Int64(min(options.seconds, 2) * 1000))
        let most = options.connections.max() ?? 8
        _ = try await workloads.measure(
            "warm-up (ours)", requests, cycle: true, connections: most, duration: warmUp)
        _ = try await workloads.measure(
            "warm-up (peer)", requests, cycle: true, connections: most, port: peerPort, cpu: peerCPU,
            duration: warmUp)
        var rounds: [Round] = []
        for connections in options.connections {
            for round in 1...Self.rounds {
                let ours = try await workloads.measure(
                    "\(Workloads.myinfoLabel) (ours, round \(round))", requests, cycle: true,
                    connections: connections)
                let peer = try await workloads.measure(
                    "\(Workloads.myinfoLabel) (peer, round \(round))", requests, cycle: true,
                    connections: connections, port: peerPort, cpu: peerCPU)
                rounds.append(Round(connections: connections, round: round, ours: ours, peer: peer))
            }
        }
        return rounds
    }
}

/// The comparison's table (markdown, like LoadReport's).
struct PeerReport: Sendable {
    let rounds: [PeerComparison.Round]

    var markdown: String {
        var lines = [
            "| connections | round | ours req/s | ours p50 ms | ours p99 ms | peer req/s | peer p50 ms | peer p99 ms | ours/peer | errors ours, peer | CPU µs/request ours: server, PostgreSQL, load | peer: server, PostgreSQL, load |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        func cpu(_ result: LoadResult) -> String {
            result.cpu.map { $0.micros(per: result.completed).map(String.init).joined(separator: " + ") } ?? "–"
        }
        for round in rounds {
            let (ours, peer) = (round.ours, round.peer)
            lines.append(
                "| \(round.connections) | \(round.round) | \(Int(ours.requestsPerSecond.rounded())) | "
                    + String(format: "%.1f | %.1f", ours.percentile(0.5), ours.percentile(0.99))
                    + " | \(Int(peer.requestsPerSecond.rounded())) | "
                    + String(format: "%.1f | %.1f", peer.percentile(0.5), peer.percentile(0.99))
                    + " | \(Self.ratio(ours, peer)) | \(ours.errors), \(peer.errors) | \(cpu(ours)) | \(cpu(peer)) |")
        }
        lines.append("")
        for connections in Array(Set(rounds.map(\.connections))).sorted() {
            let ratios = rounds.filter { $0.connections == connections }.compactMap { round in
                round.peer.requestsPerSecond > 0 ? round.ours.requestsPerSecond / round.peer.requestsPerSecond : nil
            }
            guard let low = ratios.min(), let high = ratios.max() else { continue }
            lines.append(
                "myinfo, \(connections) connections: ours/peer \(String(format: "%.2f", low))–\(String(format: "%.2f", high))× over \(ratios.count) rounds"
            )
        }
        return lines.joined(separator: "\n")
    }

    static func ratio(_ ours: LoadResult, _ peer: LoadResult) -> String {
        peer.requestsPerSecond > 0 ? String(format: "%.2f", ours.requestsPerSecond / peer.requestsPerSecond) : "–"
    }

    func print(options: Options) {
        Swift.print(
            "\nmyinfo against the peer (Benchmarks/MyinfoPeer: Hummingbird 2 + postgres-nio, the same statement prepared, the same body), alternately, \(PeerComparison.rounds) rounds, \(options.seconds) s each, pools \(options.poolSize)"
        )
        Swift.print(markdown)
    }
}

/// One request on a fresh connection; the status and the whole body (HTTPLoad keeps statuses only).
enum OneResponse {
    struct Answer: Sendable {
        let status: UInt
        let body: [UInt8]
    }

    static func fetch(_ request: LoadRequest, port: Int) async throws -> Answer {
        let group = MultiThreadedEventLoopGroup.singleton
        let loop = group.next()
        let collector = Collector(promise: loop.makePromise(of: Answer.self))
        let channel = try await ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.pipeline.addHTTPClientHandlers().flatMap { channel.pipeline.addHandler(collector) }
            }
            .connect(host: "127.0.0.1", port: port).get()
        let timeout = loop.scheduleTask(in: .seconds(10)) {
            collector.complete(.failure(BenchError("no answer from port \(port) in 10 s")))
        }
        channel.write(HTTPClientRequestPart.head(request.head), promise: nil)
        if let body = request.body { channel.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil) }
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        defer { timeout.cancel() }
        let answer = try await collector.promise.futureResult.get()
        try? await channel.close()
        return answer
    }

    /// Completes its promise once: with the response at its end, or with the first failure.
    private final class Collector: ChannelInboundHandler, @unchecked Sendable {
        // @unchecked: touched only on its channel's event loop (the timeout runs there too).
        typealias InboundIn = HTTPClientResponsePart
        let promise: EventLoopPromise<Answer>
        private var done = false
        private var status: UInt = 0
        private var body: [UInt8] = []

        init(promise: EventLoopPromise<Answer>) { self.promise = promise }

        func complete(_ result: Result<Answer, any Error>) {
            guard !done else { return }
            done = true
            promise.completeWith(result)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): status = head.status.code
            case .body(let buffer): body += buffer.readableBytesView
            case .end: complete(.success(Answer(status: status, body: body)))
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            complete(.failure(error))
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            complete(.failure(ChannelError.ioOnClosedChannel))
        }
    }
}
