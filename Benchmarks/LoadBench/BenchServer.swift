import BenchSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Postgres
import Synchronization
import TestSupport

/// The service under load: a durable private PostgreSQL and the release `shopledger serve` process on
/// it, configured as in production except that it trusts the benchmark's own certificate chain and
/// accepts development tokens (so the load needs no Firebase).
struct BenchServer {
    let cluster: LocalPostgres
    let running: LocalPostgres.Running
    let databaseURL: String
    let port: Int
    let process: ServerProcess
    let folder: String
    let binary: String
    let poolSize: Int
    let logLevel: String
    /// The benchmark's root certificate, which the server trusts (DER).
    var rootFile: String { folder + "/bench-root.der" }

    static func start(
        binary: String, folder: String, rootCertificate: [UInt8], poolSize: Int, logLevel: String
    ) async throws -> BenchServer {
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let cluster = try LocalPostgres(
            options: .init(dataDirectory: folder + "/data", port: try TestCluster.freePort(), durable: true))
        let running = try await cluster.start()
        let admin = PostgresClient(
            configuration: .init(
                connection: .init(url: running.url(database: "postgres")), minimumConnections: 0, maximumConnections: 1)
        )
        try await admin.query("CREATE DATABASE bench")
        await admin.shutdown()
        let databaseURL = running.url(database: "bench")

        let rootFile = folder + "/bench-root.der"
        _ = FileManager.default.createFile(atPath: rootFile, contents: Data(rootCertificate))
        let port = try TestCluster.freePort()
        let pid = try ChildProcess.spawn(
            Self.serveArguments(
                binary: binary, port: port, databaseURL: databaseURL, rootFile: rootFile, poolSize: poolSize),
            environment: environment(logLevel: logLevel), workingDirectory: "/tmp", output: folder + "/server.log",
            append: false)
        let process = ServerProcess(pid: pid)
        let server = BenchServer(
            cluster: cluster, running: running, databaseURL: databaseURL, port: port, process: process, folder: folder,
            binary: binary, poolSize: poolSize, logLevel: logLevel)
        try await server.waitUntilReady()
        return server
    }

    /// The server started again on the same cluster, port and settings (after `stopServer`).
    func restarted() async throws -> BenchServer {
        let pid = try ChildProcess.spawn(
            Self.serveArguments(
                binary: binary, port: port, databaseURL: databaseURL, rootFile: rootFile, poolSize: poolSize),
            environment: Self.environment(logLevel: logLevel), workingDirectory: "/tmp", output: folder + "/server.log",
            append: true)
        let server = BenchServer(
            cluster: cluster, running: running, databaseURL: databaseURL, port: port, process: ServerProcess(pid: pid),
            folder: folder, binary: binary, poolSize: poolSize, logLevel: logLevel)
        try await server.waitUntilReady()
        return server
    }

    /// `serve` as the benchmark runs it (ours, and `--baseline`'s earlier build).
    static func serveArguments(
        binary: String, port: Int, databaseURL: String, rootFile: String, poolSize: Int
    ) -> [String] {
        [
            binary, "serve", "--port", String(port), "--database-url", databaseURL, "--root-cert", rootFile,
            "--dev-auth", "--stub-receipts", "--pool-size", String(poolSize),
        ]
    }

    static func environment(logLevel: String) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["SHOPLEDGER_LOG_LEVEL"] = logLevel
        return environment
    }

    private func waitUntilReady() async throws {
        for _ in 0..<600 {
            if let status = try? await Self.get(port: port, path: "/readyz"), status == 200 { return }
            guard process.isRunning else { throw BenchError("the server exited at start; see \(folder)/server.log") }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw BenchError("the server did not become ready in 60 s; see \(folder)/server.log")
    }

    /// On SIGINT or SIGTERM: terminate the server, stop the cluster, exit 1.
    func stopOnSignals() -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [process, cluster] in
                process.terminate()
                try? cluster.stopSynchronously()
                exit(1)
            }
            source.resume()
            return source
        }
    }

    /// Stops the server (SIGTERM, waits for it); the cluster keeps running.
    func stopServer() async {
        process.terminate()
        await process.exited()
    }

    func stop() async throws {
        await stopServer()
        try await cluster.stop()
    }

    /// A one-off GET; the status code.
    static func get(port: Int, path: String) async throws -> UInt {
        let result = try await HTTPLoad.run(
            label: "probe", host: "127.0.0.1", port: port, connections: 1, duration: .seconds(10),
            group: MultiThreadedEventLoopGroup.singleton, expect: { _ in true }
        ) { index in
            index == 0
                ? LoadRequest(
                    head: HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: ["host": "bench"]),
                    body: nil) : nil
        }
        return result.statuses.keys.first ?? 0
    }
}

/// The spawned `shopledger serve` (`ChildProcess.spawn`, so it starts with SIGTERM unblocked).
final class ServerProcess: Sendable {
    let pid: pid_t
    private let status = Mutex<Int32?>(nil)

    init(pid: pid_t) { self.pid = pid }

    /// Reaps it without blocking when it has exited.
    var isRunning: Bool {
        status.withLock { status in
            if status != nil { return false }
            var raw: Int32 = 0
            guard waitpid(pid, &raw, WNOHANG) == pid else { return true }
            status = ChildProcess.exitCode(raw)
            return false
        }
    }

    func terminate() {
        if isRunning { kill(pid, SIGTERM) }
    }

    /// Waits for the exit by polling, so no cooperative thread blocks in `waitpid`.
    func exited() async {
        while isRunning { try? await Task.sleep(for: .milliseconds(20)) }
    }
}
