import BenchSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Postgres
import TestSupport

/// Issue 30's side-by-sides, each against a second server on the same database, same readers, same
/// seconds. At each level of `--connections`, three rounds, each timing ours and then the other; the
/// ratio is ours/other per round. Before anything is timed the two answers must be equal byte for byte
/// for several readers, a missing token and an unregistered user, or the run stops. The other is:
/// - the myinfo peer (`--peer`; Benchmarks/MyinfoPeer: Hummingbird 2 + postgres-nio, our exact statement
///   prepared, the same JSON): myinfo only;
/// - an earlier build of shopledger (`--baseline`, e.g. the previous main): myinfo, then new purchases
///   (`POST /api/v1/purchases`, each transaction signed for one side and posted once).
struct PeerComparison {
    enum Contender {
        case peer(String)
        case baseline(String)

        var name: String {
            switch self {
            case .peer: "peer"
            case .baseline: "baseline"
            }
        }
    }

    let contender: Contender
    let server: BenchServer
    let workloads: Workloads

    static let rounds = 3

    struct Round: Sendable {
        let label: String
        let connections: Int
        let round: Int
        let ours: LoadResult
        let peer: LoadResult
    }

    func run() async throws -> PeerReport {
        let options = workloads.options
        let name = contender.name
        let port = try TestCluster.freePort()
        let arguments: [String]
        var environment: [String: String]?
        switch contender {
        case .peer(let binary):
            // The peer prepares the very text our libpq layer prepares (so a change of ours is measured on both).
            let statement = try await Ceiling.myinfoStatement(databaseURL: server.databaseURL)
            let statementFile = server.folder + "/myinfo-peer.sql"
            guard FileManager.default.createFile(atPath: statementFile, contents: Data(statement.utf8)) else {
                throw BenchError("could not write \(statementFile)")
            }
            arguments = [
                binary, "--port", String(port), "--database-url", server.databaseURL, "--pool-size",
                String(options.poolSize), "--statement-file", statementFile,
            ]
        case .baseline(let binary):
            arguments = BenchServer.serveArguments(
                binary: binary, port: port, databaseURL: server.databaseURL, rootFile: server.rootFile,
                poolSize: options.poolSize)
            environment = BenchServer.environment(logLevel: options.logLevel)
        }
        progress("LoadBench: starting the \(name) \(arguments[0]) (pool \(options.poolSize)) on port \(port)")
        let pid = try ChildProcess.spawn(
            arguments, environment: environment, workingDirectory: "/tmp", output: server.folder + "/\(name).log",
            append: false)
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
            return PeerReport(name: name, rounds: rounds)
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
                throw BenchError("the \(contender.name) exited at start; see \(server.folder)/\(contender.name).log")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw BenchError("the \(contender.name) did not answer in 60 s; see \(server.folder)/\(contender.name).log")
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
            let name = contender.name
            guard ours.status == expected, peer.status == expected else {
                throw BenchError(
                    "myinfo for \(what): expected \(expected) from both, ours answered \(ours.status), the \(name) \(peer.status)"
                )
            }
            guard ours.body == peer.body else {
                throw BenchError(
                    """
                    the \(name)'s myinfo body differs from ours for \(what); nothing was timed.
                    ours: \(String(decoding: ours.body, as: UTF8.self))
                    \(name): \(String(decoding: peer.body, as: UTF8.self))
                    """)
            }
        }
        progress(
            "LoadBench: the \(contender.name)'s myinfo bodies equal ours byte for byte (\(readers.count) readers, no token, unregistered)"
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
        let name = contender.name
        var rounds: [Round] = []
        for connections in options.connections {
            for round in 1...Self.rounds {
                let ours = try await workloads.measure(
                    "\(Workloads.myinfoLabel) (ours, round \(round))", requests, cycle: true,
                    connections: connections)
                let peer = try await workloads.measure(
                    "\(Workloads.myinfoLabel) (\(name), round \(round))", requests, cycle: true,
                    connections: connections, port: peerPort, cpu: peerCPU)
                rounds.append(
                    Round(label: Workloads.myinfoLabel, connections: connections, round: round, ours: ours, peer: peer))
            }
        }
        guard case .baseline = contender else { return rounds }
        // New purchases: every transaction is signed once and posted once, to one side.
        let label = "POST /api/v1/purchases (new JWS)"
        let perRun = max(10_000, Int(options.seconds * 5_000))
        let runs = 2 * Self.rounds * options.connections.count
        progress("LoadBench: signing \(runs * perRun) transactions for the \(name)'s purchases")
        let bodies = workloads.signedTransactions(count: runs * perRun, offset: 4_000_000_000)
        var nextRun = 0
        func nextRequests() -> [LoadRequest] {
            defer { nextRun += 1 }
            return bodies[(nextRun * perRun)..<((nextRun + 1) * perRun)].enumerated().map { index, jws in
                Workloads.request(
                    .POST, "/api/v1/purchases", token: "dev:u\(index % options.users)", json: ["signedTransaction": jws]
                )
            }
        }
        for connections in options.connections {
            for round in 1...Self.rounds {
                let ours = try await workloads.measure(
                    "\(label) (ours, round \(round))", nextRequests(), cycle: false, connections: connections)
                let peer = try await workloads.measure(
                    "\(label) (\(name), round \(round))", nextRequests(), cycle: false, connections: connections,
                    port: peerPort, cpu: peerCPU)
                rounds.append(Round(label: label, connections: connections, round: round, ours: ours, peer: peer))
            }
        }
        return rounds
    }
}

/// The comparison's table (markdown, like LoadReport's).
struct PeerReport: Sendable {
    /// "peer" or "baseline".
    let name: String
    let rounds: [PeerComparison.Round]

    var markdown: String {
        var lines = [
            "| workload | connections | round | ours req/s | ours p50 ms | ours p99 ms | \(name) req/s | \(name) p50 ms | \(name) p99 ms | ours/\(name) | errors ours, \(name) | CPU µs/request ours: server, PostgreSQL, load | \(name): server, PostgreSQL, load |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        func cpu(_ result: LoadResult) -> String {
            result.cpu.map { $0.micros(per: result.completed).map(String.init).joined(separator: " + ") } ?? "–"
        }
        for round in rounds {
            let (ours, peer) = (round.ours, round.peer)
            lines.append(
                "| \(round.label) | \(round.connections) | \(round.round) | \(Int(ours.requestsPerSecond.rounded())) | "
                    + String(format: "%.1f | %.1f", ours.percentile(0.5), ours.percentile(0.99))
                    + " | \(Int(peer.requestsPerSecond.rounded())) | "
                    + String(format: "%.1f | %.1f", peer.percentile(0.5), peer.percentile(0.99))
                    + " | \(Self.ratio(ours, peer)) | \(ours.errors), \(peer.errors) | \(cpu(ours)) | \(cpu(peer)) |")
        }
        lines.append("")
        var workloads: [String] = []
        for round in rounds where !workloads.contains(round.label) { workloads.append(round.label) }
        for label in workloads {
            for connections in Array(Set(rounds.map(\.connections))).sorted() {
                let ratios = rounds.filter { $0.label == label && $0.connections == connections }.compactMap { round in
                    round.peer.requestsPerSecond > 0 ? round.ours.requestsPerSecond / round.peer.requestsPerSecond : nil
                }
                guard let low = ratios.min(), let high = ratios.max() else { continue }
                lines.append(
                    "\(label), \(connections) connections: ours/\(name) \(String(format: "%.2f", low))–\(String(format: "%.2f", high))× over \(ratios.count) rounds"
                )
            }
        }
        return lines.joined(separator: "\n")
    }

    static func ratio(_ ours: LoadResult, _ peer: LoadResult) -> String {
        peer.requestsPerSecond > 0 ? String(format: "%.2f", ours.requestsPerSecond / peer.requestsPerSecond) : "–"
    }

    func print(options: Options, version: String? = nil) {
        let what =
            name == "peer"
            ? "myinfo against the peer (Benchmarks/MyinfoPeer: Hummingbird 2 + postgres-nio, the same statement prepared, the same body)"
            : "myinfo and new purchases against the baseline, \(version ?? "an earlier build") on the same database"
        Swift.print(
            "\n\(what), alternately, \(PeerComparison.rounds) rounds, \(options.seconds) s each, pools \(options.poolSize)"
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
