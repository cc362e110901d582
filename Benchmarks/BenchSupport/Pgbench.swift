import Foundation
import Postgres

/// Runs PostgreSQL's own `pgbench` (libpq in C) against the bench's cluster: the database ceiling
/// our Swift path is compared with.
public struct Pgbench: Sendable {
    public struct Result: Sendable {
        public let transactions: Int
        public let failed: Int
        public let perSecond: Double
        /// Per-transaction latencies in milliseconds, sorted (from pgbench's `-l` log).
        public let latencies: [Double]
    }

    public let executable: String
    public let socketDirectory: String
    public let port: Int
    public let user: String
    public let database: String
    /// Where scripts, output and per-transaction logs go.
    public let folder: String

    public init?(socketDirectory: String, port: Int, user: String, database: String, folder: String) {
        guard let executable = LocalPostgres.tool("pgbench") else { return nil }
        self.executable = executable
        self.socketDirectory = socketDirectory
        self.port = port
        self.user = user
        self.database = database
        self.folder = folder
    }

    /// Runs `scripts` (equal weights) for `seconds`; `defines` become `-D`
    /// variables; `options` is passed as PGOPTIONS (session settings for pgbench's connections only).
    /// One thread per client (`-j clients`), like our one pool thread per connection: on a shared
    /// machine the scheduler shares CPU per thread, and two pgbench threads would be starved.
    /// `mode` is pgbench's query protocol (`-M`); without `logLatencies` no per-transaction log is
    /// written (cheaper for very fast statements) and `latencies` is empty.
    public func run(
        scripts: [String], defines: [String: String], clients: Int, seconds: Int, options: String = "",
        mode: String = "prepared", logLatencies: Bool = true
    ) async throws -> Result {
        let runFolder = folder + "/pgbench-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: runFolder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: runFolder) }
        var arguments = [
            "-n", "-M", mode, "-c", String(clients), "-j", String(clients), "-T", String(seconds),
            "-h", socketDirectory, "-p", String(port), "-U", user,
        ]
        if logLatencies { arguments += ["-l", "--log-prefix=\(runFolder)/tx"] }
        for (index, script) in scripts.enumerated() {
            let path = runFolder + "/script\(index).sql"
            try script.write(toFile: path, atomically: true, encoding: .utf8)
            arguments += ["-f", path + "@1"]
        }
        for (name, value) in defines.sorted(by: { $0.key < $1.key }) { arguments += ["-D", "\(name)=\(value)"] }
        arguments.append(database)

        let output = runFolder + "/out.txt"
        let status = try await Self.spawnAndWait(
            executable, arguments, output: output, workingDirectory: runFolder, options: options)
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw BenchError(
                "pgbench failed (\(status)):\n" + text.split(separator: "\n").suffix(12).joined(separator: "\n"))
        }
        func value(after prefix: String) -> Double? {
            text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap {
                Double($0.dropFirst(prefix.count).prefix { $0 != " " })
            }
        }
        var latencies: [Double] = []
        for file in try FileManager.default.contentsOfDirectory(atPath: runFolder) where file.hasPrefix("tx") {
            let log = try String(contentsOfFile: runFolder + "/" + file, encoding: .utf8)
            // client_id transaction_no latency_us script_no epoch epoch_us
            for line in log.split(separator: "\n") {
                let fields = line.split(separator: " ")
                if fields.count >= 3, let micros = Double(fields[2]) { latencies.append(micros / 1000) }
            }
        }
        return Result(
            transactions: Int(value(after: "number of transactions actually processed: ") ?? 0),
            failed: Int(value(after: "number of failed transactions: ") ?? 0),
            perSecond: value(after: "tps = ") ?? 0,
            latencies: latencies.sorted())
    }
}

extension Pgbench {
    /// Runs a program (`ChildProcess.spawn`: no signal blocked in the child, so pgbench's `-T` timer
    /// fires) and waits for it on a thread of its own, not on Swift's cooperative pool.
    static func spawnAndWait(
        _ executable: String, _ arguments: [String], output: String, workingDirectory: String, options: String
    ) async throws -> Int32 {
        var environment = ProcessInfo.processInfo.environment
        if !options.isEmpty { environment["PGOPTIONS"] = options }
        let pid = try ChildProcess.spawn(
            [executable] + arguments, environment: environment, workingDirectory: workingDirectory, output: output,
            append: false)
        return try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Swift.Result { try ChildProcess.waitForExit(pid, executable: executable) })
            }
            .start()
        }
    }
}

public struct BenchError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
