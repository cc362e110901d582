import Foundation

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
        let candidates = ["/usr/lib/postgresql/15/bin/pgbench", "/usr/bin/pgbench"]
        guard let executable = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return nil
        }
        self.executable = executable
        self.socketDirectory = socketDirectory
        self.port = port
        self.user = user
        self.database = database
        self.folder = folder
    }

    /// Runs `scripts` (equal weights) with `-M prepared` for `seconds`; `defines` become `-D`
    /// variables; `options` is passed as PGOPTIONS (session settings for pgbench's connections only).
    /// One thread per client (`-j clients`), like our one pool thread per connection: on a shared
    /// machine the scheduler shares CPU per thread, and two pgbench threads would be starved.
    public func run(
        scripts: [String], defines: [String: String], clients: Int, seconds: Int, options: String = ""
    ) async throws -> Result {
        let runFolder = folder + "/pgbench-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: runFolder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: runFolder) }
        var arguments = [
            "-n", "-M", "prepared", "-c", String(clients), "-j", String(clients), "-T", String(seconds),
            "-l", "--log-prefix=\(runFolder)/tx", "-h", socketDirectory, "-p", String(port), "-U", user,
        ]
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
    /// Runs a program with `posix_spawn` and waits for it on a thread of its own. Not Foundation's
    /// `Process`: the child inherits the spawning thread's signal mask, and Swift's threads block
    /// SIGALRM and SIGTERM, so pgbench's `-T` timer never fired (it ran on, and ignored SIGTERM).
    /// Here the child starts with nothing blocked.
    public static func spawnAndWait(
        _ executable: String, _ arguments: [String], output: String, workingDirectory: String, options: String
    ) async throws -> Int32 {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(
                    with: Swift.Result {
                        try spawnAndWaitBlocking(
                            executable, arguments, output: output, workingDirectory: workingDirectory, options: options)
                    })
            }
            thread.start()
        }
    }

    private static func spawnAndWaitBlocking(
        _ executable: String, _ arguments: [String], output: String, workingDirectory: String, options: String
    ) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var nothing = sigset_t()
        sigemptyset(&nothing)
        posix_spawnattr_setsigmask(&attributes, &nothing)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        // The per-transaction logs go to the working directory; the shell's cd sets it.
        let command = ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", workingDirectory, executable] + arguments
        let argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var environment = ProcessInfo.processInfo.environment
        if !options.isEmpty { environment["PGOPTIONS"] = options }
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, envp)
        guard spawned == 0 else {
            throw BenchError("cannot start \(executable): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { throw BenchError("waiting for \(executable) failed") }
        }
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}

public struct BenchError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
