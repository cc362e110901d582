import BenchSupport
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import TestSupport

/// `make bench`'s end-to-end figures: the release `shopledger serve` on a durable private PostgreSQL
/// (fsync on, synchronous_commit on), driven over loopback by a closed-loop NIO load generator with C
/// keep-alive connections for T seconds per workload:
///
/// - `POST /api/v1/purchases`, new StoreKit 2 signed transactions (signed beforehand by a benchmark
///   certificate chain the server is configured to trust: every request is a full verification);
/// - `POST /v1/user/shop/ios`, the same through the SeSAC form surface;
/// - duplicate re-posts of already recorded transactions;
/// - `GET /v1/user/shop/myinfo`, by 1,000 readers who each hold the same `--history` purchases,
///   recorded before the clock starts (so two builds' myinfo figures list the same rows).
///
/// Each workload's row also says the CPU per request of the server, PostgreSQL and the load
/// generator (`RequestCPU`), which other work on the machine moves far less than requests/s.
///
/// With `--peer`, then myinfo against a minimal Hummingbird + postgres-nio server running the same
/// statement prepared (`PeerComparison`, Benchmarks/MyinfoPeer), alternately, three rounds per level.
/// With `--baseline`, then myinfo and new purchases against an earlier build of shopledger (the previous
/// main) on the same database, the same way: a change's before and after in one run.
///
/// Then, on the same cluster with the server stopped, the database ceiling (`Ceiling`): the exact
/// purchase statement through `pgbench -M prepared` with as many clients as the server's pool.
/// Last, with the server started again, myinfo before and after the purchases grow tenfold and are
/// analyzed (`GrowthCheck`).
///
/// Usage: LoadBench [--seconds T] [--connections C1,C2,…] [--server PATH] [--pool-size N] [--log-level L]
///                  [--history N] [--peer PATH] [--baseline PATH] [--only peer|purchases]
@main
struct LoadBench {
    static func main() async throws {
        let options = try Options(CommandLine.arguments.dropFirst())
        let pki = try TestPKI()
        let folder = "/tmp/shopledger-load-bench-\(ProcessInfo.processInfo.processIdentifier)"
        progress(
            "LoadBench: starting PostgreSQL and \(options.server) (pool \(options.poolSize), SHOPLEDGER_LOG_LEVEL=\(options.logLevel))"
        )
        var server = try await BenchServer.start(
            binary: options.server, folder: folder, rootCertificate: TestPKI.der(pki.root), poolSize: options.poolSize,
            logLevel: options.logLevel)
        // Interrupted (Ctrl-C, timeout): stop the server and the cluster rather than leave them running.
        var interrupted = server.stopOnSignals()
        do {
            let cpu = RequestCPU.Sampler(serverPID: server.process.pid, dataDirectory: folder + "/data")
            let workloads = Workloads(pki: pki, port: server.port, options: options, cpu: cpu)
            try await workloads.seed()
            let results = options.onlyPeer ? [] : try await workloads.runAll()
            /// Our server started again, and the workloads measuring it. Before each comparison the other side
            /// starts fresh, so ours does too: neither carries the purchase workloads' heap and caches.
            func restartServer() async throws -> Workloads {
                interrupted.forEach { $0.cancel() }
                await server.stopServer()
                server = try await server.restarted()
                interrupted = server.stopOnSignals()
                return Workloads(
                    pki: pki, port: server.port, options: options,
                    cpu: RequestCPU.Sampler(serverPID: server.process.pid, dataDirectory: folder + "/data"))
            }
            var comparisons: [PeerReport] = []
            if let binary = options.peer {
                let workloads = options.onlyPeer ? workloads : try await restartServer()
                comparisons.append(
                    try await PeerComparison(contender: .peer(binary), server: server, workloads: workloads).run())
            }
            var baselineVersion: String?
            if let binary = options.baseline {
                baselineVersion = version(of: binary)
                let workloads = try await restartServer()
                comparisons.append(
                    try await PeerComparison(contender: .baseline(binary), server: server, workloads: workloads).run())
            }
            await server.stopServer()
            func printComparisons() {
                for comparison in comparisons { comparison.print(options: options, version: baselineVersion) }
            }
            if options.onlyPeer {
                try await server.stop()
                try? FileManager.default.removeItem(atPath: folder)
                printComparisons()
                interrupted.forEach { $0.cancel() }
                return
            }
            progress(
                "LoadBench: database ceilings, pgbench -M prepared, \(options.poolSize) clients, \(options.seconds) s each"
            )
            let ceiling = try await Ceiling.measure(
                server: server, clients: options.poolSize, seconds: options.seconds, products: Workloads.products,
                users: options.users)
            if options.onlyPurchases {
                try await server.stop()
                try? FileManager.default.removeItem(atPath: folder)
                LoadReport(results: results, ceiling: ceiling, options: options).print()
                printComparisons()
                interrupted.forEach { $0.cancel() }
                return
            }
            // Last, as it grows the database: myinfo before and after the purchases grow tenfold and are analyzed.
            interrupted.forEach { $0.cancel() }
            server = try await server.restarted()
            interrupted = server.stopOnSignals()
            let growth = try await GrowthCheck(
                server: server,
                workloads: Workloads(
                    pki: pki, port: server.port, options: options,
                    cpu: RequestCPU.Sampler(serverPID: server.process.pid, dataDirectory: folder + "/data"))
            ).run()
            try await server.stop()
            try? FileManager.default.removeItem(atPath: folder)
            LoadReport(results: results, ceiling: ceiling, options: options).print()
            printComparisons()
            growth.print()
            interrupted.forEach { $0.cancel() }
        } catch {
            try? await server.stop()
            throw error
        }
    }
}

struct Options {
    var seconds = 10.0
    /// Each workload runs once per level: few connections show latency, many show the queueing.
    var connections = [8, 32]
    var server: String
    var poolSize = 16
    var logLevel = "info"
    var users = 1000
    /// Purchases each of myinfo's readers holds, recorded before any workload is timed.
    var history = 10
    /// The built `myinfo-peer` (Benchmarks/MyinfoPeer) to measure myinfo against, if any.
    var peer: String?
    /// An earlier shopledger binary (the previous main) to measure myinfo and new purchases against.
    var baseline: String?
    /// `--only peer`: only the readers' history and the comparisons (no other workload, no ceiling).
    var onlyPeer = false
    /// `--only purchases`: only the new-purchase workloads, then the ceilings and the floor (no duplicates,
    /// no myinfo, no growth check): a write-path change's figures in a few minutes.
    var onlyPurchases = false

    init(_ arguments: ArraySlice<String>) throws {
        server =
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
                "shopledger"
            ).path
        var arguments = arguments
        while let flag = arguments.popFirst() {
            if flag == "--help" || flag == "-h" {
                print(Self.usage)
                exit(0)
            }
            guard let value = arguments.popFirst() else { throw BenchError("\(flag) needs a value") }
            switch flag {
            case "--seconds": seconds = Double(value) ?? seconds
            case "--connections":
                let levels = value.split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
                guard !levels.isEmpty else { throw BenchError("--connections takes a list like 8,32") }
                connections = levels
            case "--server": server = value
            case "--pool-size": poolSize = Int(value) ?? poolSize
            case "--log-level": logLevel = value
            case "--history":
                guard let count = Int(value), (0...1000).contains(count) else {
                    throw BenchError("--history takes 0…1000 purchases per reader")
                }
                history = count
            case "--peer":
                // Absolute: the peer is started in /tmp.
                peer = URL(fileURLWithPath: value).standardizedFileURL.path
                guard let peer, FileManager.default.isExecutableFile(atPath: peer) else {
                    throw BenchError(
                        "--peer: no executable at \(value) (swift build -c release --package-path Benchmarks/MyinfoPeer)"
                    )
                }
            case "--baseline":
                baseline = URL(fileURLWithPath: value).standardizedFileURL.path
                guard let baseline, FileManager.default.isExecutableFile(atPath: baseline) else {
                    throw BenchError("--baseline: no executable at \(value)")
                }
            case "--only":
                switch value {
                case "peer": onlyPeer = true
                case "purchases": onlyPurchases = true
                default: throw BenchError("--only takes peer or purchases")
                }
            default: throw BenchError("unknown option \(flag)")
            }
        }
        if onlyPeer, peer == nil, baseline == nil {
            throw BenchError("--only peer needs --peer PATH or --baseline PATH")
        }
    }

    static let usage = """
        Usage: LoadBench [--seconds T] [--connections C1,C2,…] [--server PATH] [--pool-size N] [--log-level L]
                         [--history N] [--peer PATH] [--baseline PATH] [--only peer|purchases]
          --seconds      seconds per workload and level (default 10)
          --connections  keep-alive client connections; each workload runs at every level (default 8,32)
          --server       the shopledger binary (default: beside LoadBench)
          --pool-size    the server's PostgreSQL pool, and the ceiling's pgbench clients (default 16)
          --log-level    the server's SHOPLEDGER_LOG_LEVEL (default info: one access line per request, as deployed)
          --history      purchases each of myinfo's 1,000 readers holds, recorded before the clock starts
                         (default 10); the purchase workloads' users are others
          --peer         a built myinfo-peer (Benchmarks/MyinfoPeer): after the workloads, myinfo against it and
                         ours alternately, 3 rounds per level, once their bodies matched byte for byte
          --baseline     an earlier shopledger binary (e.g. the previous main's release build): after the workloads,
                         myinfo and then new purchases against it and ours alternately on the same database,
                         3 rounds per level, once their myinfo bodies matched byte for byte
          --only peer    with --peer or --baseline: skip the other workloads and the database ceilings
          --only purchases  only the new-purchase workloads, the ceilings and the floor (no growth check)
        """

    var duration: Duration { .milliseconds(Int64(seconds * 1000)) }
}

/// The four workloads, their requests prepared before the clock starts.
struct Workloads {
    let pki: TestPKI
    let port: Int
    let options: Options
    let cpu: RequestCPU.Sampler
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    static let products =
        (1...4).map { "com.memolease.sesac1.sprout\($0)" } + (1...7).map { "com.memolease.sesac1.background\($0)" }

    static let myinfoLabel = "GET /v1/user/shop/myinfo"

    /// myinfo's requests, one per reader (r0…), each `idtoken: dev:r<n>`.
    var myinfoRequests: [LoadRequest] {
        (0..<options.users).map { Self.request(.GET, "/v1/user/shop/myinfo", token: "dev:r\($0)", sesac: true) }
    }

    /// Registers the purchase workloads' users and myinfo's readers, and records the readers' history.
    func seed() async throws {
        let users = options.users
        // The purchase workloads' users (u0…) and myinfo's readers (r0…), each registered by a request.
        let registered = try await HTTPLoad.run(
            label: "register", host: "127.0.0.1", port: port, connections: 8, duration: .seconds(120), group: group,
            expect: { $0 == 201 || $0 == 200 }
        ) { index in
            index < 2 * users
                ? Self.request(
                    .POST, "/api/v1/me", token: index < users ? "dev:u\(index)" : "dev:r\(index - users)", json: nil)
                : nil
        }
        guard registered.completed == 2 * users else {
            throw BenchError("registered \(registered.completed) of \(2 * users) users: \(registered.statuses)")
        }
        // myinfo's readers (r0…) hold `history` purchases each, recorded now, off the clock: what
        // myinfo lists is then the same whichever build runs and however fast it recorded the
        // purchase workloads (whose users, u0…, it never reads).
        let history = options.history * users
        let historyBodies = signedTransactions(count: history, offset: 3_000_000_000)
        let recorded = try await HTTPLoad.run(
            label: "history", host: "127.0.0.1", port: port, connections: 8, duration: .seconds(300), group: group,
            expect: { $0 == 200 }
        ) { index in
            index < history
                ? Self.request(
                    .POST, "/api/v1/purchases", token: "dev:r\(index / options.history)",
                    json: ["signedTransaction": historyBodies[index]]) : nil
        }
        guard recorded.completed == history else {
            throw BenchError("recorded \(recorded.completed) of \(history) reader purchases: \(recorded.statuses)")
        }
    }

    /// The timed workloads, at every level of `--connections` (after `seed`).
    func runAll() async throws -> [LoadResult] {
        let users = options.users
        // Enough signed transactions for 5,000 new purchases a second (the target is 3,000) on every
        // level, signed now (not on the clock).
        let perRun = max(10_000, Int(options.seconds * 5_000)) * options.connections.count
        progress("LoadBench: signing \(2 * perRun) transactions")
        let signingStarted = ContinuousClock.now
        let jsonBodies = signedTransactions(count: perRun, offset: 1_000_000_000)
        let formBodies = signedTransactions(count: perRun, offset: 2_000_000_000)
        let jsonRequests = jsonBodies.enumerated().map { index, jws in
            Self.request(.POST, "/api/v1/purchases", token: "dev:u\(index % users)", json: ["signedTransaction": jws])
        }
        let formRequests = formBodies.enumerated().map { index, jws in
            Self.formRequest(
                "/v1/user/shop/ios", token: "dev:u\(index % users)",
                fields: [("receipt", jws), ("product", Self.product(index))])
        }
        progress("LoadBench: signed in \(ContinuousClock.now - signingStarted)")
        let myinfo = myinfoRequests

        var results: [LoadResult] = []
        /// Runs `requests[from...]` (cycling when `cycle`); returns how many it sent.
        func run(
            _ label: String, _ requests: [LoadRequest], from start: Int = 0, cycle: Bool, connections: Int
        ) async throws -> Int {
            let result = try await measure(label, requests, from: start, cycle: cycle, connections: connections)
            results.append(result)
            return result.completed + result.errors
        }
        var jsonSent = 0
        var formSent = 0
        for connections in options.connections {
            jsonSent += try await run(
                "POST /api/v1/purchases (new JWS)", jsonRequests, from: jsonSent, cycle: false, connections: connections
            )
            formSent += try await run(
                "POST /v1/user/shop/ios (new JWS)", formRequests, from: formSent, cycle: false, connections: connections
            )
            if options.onlyPurchases { continue }
            // Duplicates: transactions already recorded, posted again by their owners.
            _ = try await run(
                "POST /api/v1/purchases (duplicate)", Array(jsonRequests.prefix(max(1, jsonSent))), cycle: true,
                connections: connections)
            _ = try await run(Self.myinfoLabel, myinfo, cycle: true, connections: connections)
        }
        return results
    }

    /// One timed run of `requests[from...]` (cycling when `cycle`) for `--seconds`, against `port` (ours
    /// unless given), with the CPU `cpu` samples (ours unless given).
    func measure(
        _ label: String, _ requests: [LoadRequest], from start: Int = 0, cycle: Bool, connections: Int,
        port: Int? = nil, cpu: RequestCPU.Sampler? = nil, duration: Duration? = nil
    ) async throws -> LoadResult {
        let duration = duration ?? options.duration
        progress("LoadBench: \(label), \(connections) connections, \(duration.seconds) s")
        let count = requests.count
        var (result, spent) = try await (cpu ?? self.cpu).measure {
            try await HTTPLoad.run(
                label: label, host: "127.0.0.1", port: port ?? self.port, connections: connections,
                duration: duration, group: group, expect: { $0 == 200 }
            ) { index in
                cycle ? requests[(start + index) % count] : (start + index < count ? requests[start + index] : nil)
            }
        }
        result.cpu = spent
        return result
    }

    static func product(_ index: Int) -> String { products[index % products.count] }

    /// Signed like the App Store signs them; the header (with its x5c chain) is encoded once.
    func signedTransactions(count: Int, offset: Int) -> [String] {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let header = TestPKI.base64URL(TestPKI.json(["alg": "ES256", "x5c": pki.x5c]))
        return (0..<count).map { index in
            let id = String(offset + index)
            // Written out rather than through JSONSerialization (which was 55% of the signing time).
            let payload = TestPKI.base64URL(
                Data(
                    """
                    {"transactionId":"\(id)","originalTransactionId":"\(id)","bundleId":"com.memolease.sesac1",\
                    "productId":"\(Self.product(index))","type":"Non-Consumable","purchaseDate":\(now - 1000),\
                    "originalPurchaseDate":\(now - 1000),"signedDate":\(now),"environment":"Production",\
                    "price":2500000,"currency":"KRW","storefront":"KOR","inAppOwnershipType":"PURCHASED"}
                    """.utf8))
            let input = header + "." + payload
            let signature = try! pki.leafKey.signature(for: Data(input.utf8))
            return input + "." + TestPKI.base64URL(signature.rawRepresentation)
        }
    }

    static func request(
        _ method: HTTPMethod, _ uri: String, token: String, json: [String: String]? = nil, sesac: Bool = false
    ) -> LoadRequest {
        var headers = HTTPHeaders([("host", "bench")])
        headers.add(name: sesac ? "idtoken" : "authorization", value: sesac ? token : "Bearer \(token)")
        var body: ByteBuffer?
        if let json {
            let data = try! JSONSerialization.data(withJSONObject: json)
            body = ByteBuffer(bytes: data)
            headers.add(name: "content-type", value: "application/json")
        }
        headers.add(name: "content-length", value: String(body?.readableBytes ?? 0))
        return LoadRequest(
            head: HTTPRequestHead(version: .http1_1, method: method, uri: uri, headers: headers), body: body)
    }

    static func formRequest(_ uri: String, token: String, fields: [(String, String)]) -> LoadRequest {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let text = fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }.joined(
            separator: "&")
        let headers = HTTPHeaders([
            ("host", "bench"), ("idtoken", token), ("content-type", "application/x-www-form-urlencoded"),
            ("content-length", String(text.utf8.count)),
        ])
        return LoadRequest(
            head: HTTPRequestHead(version: .http1_1, method: .POST, uri: uri, headers: headers),
            body: ByteBuffer(string: text))
    }
}

/// The summary table.
struct LoadReport {
    let results: [LoadResult]
    let ceiling: Ceiling.Results
    let options: Options

    var markdown: String {
        var lines = [
            "| workload | connections | requests/s | p50 ms | p90 ms | p99 ms | max ms | errors | CPU µs/request: server, PostgreSQL, load |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for result in results {
            let statuses = result.statuses.filter { $0.key != 200 }.map { "\($0.key)×\($0.value)" }.sorted().joined(
                separator: " ")
            lines.append(
                "| \(result.label) | \(result.connections) | \(Int(result.requestsPerSecond.rounded())) | "
                    + [0.5, 0.9, 0.99, 1.0].map { String(format: "%.1f", result.percentile($0)) }.joined(
                        separator: " | ")
                    + " | \(result.errors)\(statuses.isEmpty ? "" : " (\(statuses))") | "
                    + (result.cpu.map { $0.micros(per: result.completed).map(String.init).joined(separator: " + ") }
                        ?? "–")
                    + " |")
        }
        func row(_ label: String, _ result: Pgbench.Result) -> String {
            let percentiles = [0.5, 0.9, 0.99, 1.0].map { p in
                BenchSupport.percentile(result.latencies, p).map { String(format: "%.1f", $0) } ?? "–"
            }
            return "| \(label) | \(options.poolSize) | \(Int(result.perSecond.rounded())) | "
                + percentiles.joined(separator: " | ") + " | \(result.failed) | – |"
        }
        lines.append(row("database ceiling: the purchase statement, pgbench -M prepared", ceiling.purchase))
        lines.append(row("database ceiling: myinfo's statement, pgbench -M prepared", ceiling.myinfo))
        lines.append(row("database floor: a bare two-insert transaction, pgbench -M prepared", ceiling.floor))
        lines.append("")
        func share(_ result: LoadResult, of ceiling: Pgbench.Result) -> String {
            let percent =
                ceiling.perSecond > 0 ? Int((100 * result.requestsPerSecond / ceiling.perSecond).rounded()) : 0
            return "\(result.label), \(result.connections) connections: \(percent)% of its database ceiling"
        }
        for result in results where result.label.hasSuffix("(new JWS)") {
            lines.append(share(result, of: ceiling.purchase))
        }
        // The floor is the issue's yardstick (issue 44): end-to-end new purchases over a bare two-insert
        // transaction on the same cluster, same clients.
        for result in results where result.label.hasSuffix("(new JWS)") && ceiling.floor.perSecond > 0 {
            lines.append(
                "\(result.label), \(result.connections) connections: "
                    + String(format: "%.2f", result.requestsPerSecond / ceiling.floor.perSecond)
                    + " of the floor (\(Int(ceiling.floor.perSecond.rounded()))/s at \(options.poolSize) clients)")
        }
        for result in results where result.label.contains("myinfo") { lines.append(share(result, of: ceiling.myinfo)) }
        return lines.joined(separator: "\n")
    }

    func print() {
        Swift.print(
            "\nLoadBench (\(options.seconds) s per workload and level, server pool \(options.poolSize), SHOPLEDGER_LOG_LEVEL=\(options.logLevel))"
        )
        Swift.print(markdown)
    }
}

/// What `binary --version` prints (for the baseline's heading), or nil.
func version(of binary: String) -> String? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: binary)
    process.arguments = ["--version"]
    let pipe = Pipe()
    process.standardOutput = pipe
    guard (try? process.run()) != nil else { return nil }
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

/// A progress line, written at once (print's output waits in a buffer when stdout is a pipe or file).
func progress(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
