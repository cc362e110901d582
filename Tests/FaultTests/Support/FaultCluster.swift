import Foundation
import Logging
import Postgres
import TestSupport

/// A PostgreSQL cluster of one fault scenario's own (never the shared test cluster, which every other
/// suite of the test process is using): the scenario may kill it (`pg_ctl stop -m immediate`, a crash as
/// far as PostgreSQL is concerned) and start it again.
///
/// Durable (fsync and synchronous_commit on), like production: a commit acknowledged before PostgreSQL
/// is killed must survive it, which a throwaway cluster with `synchronous_commit=off` does not promise.
struct FaultCluster: Sendable {
    let folder: String
    let local: LocalPostgres
    let url: String

    private var dataDirectory: String { folder + "/data" }

    /// Creates and starts a cluster under `folder` (registered for clean-up at exit).
    static func start(in folder: String) async throws -> FaultCluster {
        FaultResources.register(folder: folder)
        var logger = Logger(label: "shopledger.fault-cluster")
        logger.logLevel = .warning
        let local = try LocalPostgres(
            options: .init(dataDirectory: folder + "/data", port: try TestCluster.freePort(), durable: true),
            logger: logger)
        let running = try await local.start()
        return FaultCluster(folder: folder, local: local, url: running.url(database: "postgres"))
    }

    /// Stops PostgreSQL the way a crash would: every backend is killed at once, nothing is flushed, the
    /// next start runs crash recovery.
    func stopImmediately() async throws {
        try await PostgresBinaries.pgCtl(["-D", dataDirectory, "-m", "immediate", "-w", "-t", "30", "stop"])
    }

    /// Starts it again (after a crash this includes recovery); returns when it accepts connections.
    func restart() async throws {
        _ = try await local.start()
    }

    /// Stops every PostgreSQL process (the postmaster first, so that it forks no new backend, then each
    /// of its children) with SIGSTOP: a hung database, as far as a client can tell. The sockets stay
    /// open and connects still reach the kernel's backlog; nothing ever answers. Returns how many
    /// processes were stopped.
    @discardableResult
    func freeze() throws -> Int {
        try signalEveryProcess(SIGSTOP)
    }

    /// SIGCONT to every PostgreSQL process (children first, the postmaster last).
    @discardableResult
    func thaw() throws -> Int {
        try signalEveryProcess(SIGCONT)
    }

    /// SIGKILL to every PostgreSQL process: the machine it ran on is gone (nothing flushed, no
    /// goodbye to clients; their sockets are reset by the kernel).
    @discardableResult
    func killEveryProcess() throws -> Int {
        try signalEveryProcess(SIGKILL)
    }

    private func signalEveryProcess(_ signal: Int32) throws -> Int {
        try Self.signalEveryProcess(signal, dataDirectory: dataDirectory)
    }

    /// `signal` to the postmaster of `dataDirectory` and each of its children (see `freeze`).
    static func signalEveryProcess(_ signal: Int32, dataDirectory: String) throws -> Int {
        let pidFile = (try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8)) ?? ""
        guard let postmaster = pidFile.split(separator: "\n").first.flatMap({ pid_t($0) }), postmaster > 0 else {
            throw FaultTestError("no postmaster.pid under \(dataDirectory)")
        }
        let children = Self.children(of: postmaster)
        if signal == SIGKILL {
            // Stopped first, the postmaster forks no new child and its children are still its own
            // (a dead one's are reparented, and no longer found) when they are listed and killed.
            kill(postmaster, SIGSTOP)
            for child in Set(children + Self.children(of: postmaster)) { kill(child, SIGKILL) }
            kill(postmaster, SIGKILL)
        } else if signal == SIGSTOP {
            kill(postmaster, signal)
            // Children forked just before the postmaster stopped are listed on a second look.
            for child in Set(children + Self.children(of: postmaster)) { kill(child, signal) }
        } else {
            for child in children { kill(child, signal) }
            kill(postmaster, signal)
        }
        return children.count + 1
    }

    /// Processes whose parent is `parent` (from /proc/<pid>/stat: "pid (comm) state ppid ...").
    private static func children(of parent: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 1, pid_t(fields[1]) == parent else { return nil }
            return pid
        }
    }

    /// Stops the cluster if it runs and removes its folder and its socket folder (`LocalPostgres` makes one
    /// under /tmp and leaves it). Never throws: it runs when a test failed too.
    func destroy() {
        FaultResources.release(folder: folder)
        if let socketFolder = url.split(separator: "?").last?.split(separator: "&").first(where: {
            $0.hasPrefix("host=")
        })?.dropFirst(5),
            socketFolder.hasPrefix("/tmp/.shopledger-")
        {
            try? FileManager.default.removeItem(atPath: String(socketFolder))
        }
    }

    /// A short-lived client on the cluster, for checks.
    func withClient<R: Sendable>(_ body: (PostgresClient) async throws -> R) async throws -> R {
        try await Self.withClient(url: url, body)
    }

    /// A short-lived client on the database at `url`, for checks.
    static func withClient<R: Sendable>(url: String, _ body: (PostgresClient) async throws -> R) async throws -> R {
        var logger = Logger(label: "shopledger.fault-check")
        logger.logLevel = .warning
        return try await TestSupport.withClient(url: url, logger: logger, body)
    }
}

/// `pg_ctl`, run as the `postgres` user when the tests run as root (as `LocalPostgres` does).
enum PostgresBinaries {
    static let pgCtlPath: String? = {
        var folders = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        let debian = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: debian)) ?? []
        folders += versions.compactMap { Int($0) }.sorted(by: >).map { "\(debian)/\($0)/bin" }
        return folders.map { $0 + "/pg_ctl" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    static func pgCtl(_ arguments: [String]) async throws {
        guard let pgCtl = pgCtlPath else {
            throw FaultTestError("pg_ctl was not found on PATH or in /usr/lib/postgresql/*/bin")
        }
        let command =
            geteuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--", pgCtl] + arguments : [pgCtl] + arguments
        let outcome = try await Spawned.run(command)
        guard outcome.status == .exited(0) else {
            throw FaultTestError(
                "pg_ctl \(arguments.joined(separator: " ")) failed (\(outcome.status)): \(outcome.output)")
        }
    }
}

struct FaultTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
