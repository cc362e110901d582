import Foundation
import Logging
import NIOPosix

/// A private PostgreSQL cluster run from the system's own binaries (`initdb`, `pg_ctl`), like the
/// "embedded postgres" libraries of other ecosystems: created on first use, reused afterwards,
/// listening on a unix socket and 127.0.0.1 only. As root the server runs as the `postgres` OS
/// user (initdb refuses root). The same code serves `shopledger` and the test suites' throwaway
/// clusters.
public struct LocalPostgres: Sendable {
    public struct Options: Sendable {
        /// The cluster's data directory (created with `initdb` when absent).
        public var dataDirectory: String
        /// TCP port on 127.0.0.1 (the unix socket uses the same number).
        public var port: Int
        /// False for throwaway test clusters: fsync and synchronous commit off, for speed only.
        public var durable: Bool
        /// Extra `-c name=value` server settings.
        public var settings: [String: String]

        public init(dataDirectory: String, port: Int = 25432, durable: Bool = true, settings: [String: String] = [:]) {
            self.dataDirectory = dataDirectory
            self.port = port
            self.durable = durable
            self.settings = settings
        }
    }

    /// Where a running cluster can be reached.
    public struct Running: Sendable {
        public let socketDirectory: String
        public let port: Int
        /// False when the cluster was already running (another process started it); then `stop`
        /// leaves it alone unless forced.
        public let startedHere: Bool
        public let superuser: String

        /// A libpq URL for `database` over the unix socket.
        public func url(database: String) -> String {
            "postgresql:///\(database)?host=\(socketDirectory)&port=\(port)&user=\(superuser)"
        }
    }

    public let options: Options
    let binaries: Binaries
    let logger: Logger

    /// Finds the server binaries; fails with a clear message when PostgreSQL is not installed.
    public init(options: Options, logger: Logger = Logger(label: "shopledger.local-postgres")) throws {
        self.options = options
        self.binaries = try Binaries.find()
        self.logger = logger
    }

    /// Creates the cluster if needed and starts it, or attaches to it when it already runs.
    public func start() async throws -> Running {
        try await NIOThreadPool.singleton.runIfActive { try startBlocking() }
    }

    /// Starts this cluster as a hot standby of `primary` (another private cluster on this machine):
    /// when its data directory does not exist yet it is made with `pg_basebackup -R` (a copy of the
    /// primary's data plus `standby.signal` and `primary_conninfo`, which point at the primary's
    /// socket), then it starts like any other and streams the primary's WAL from then on. Read-only;
    /// `pg_ctl promote` would make it a primary. Attaches when it already runs.
    public func startStandby(of primary: Running) async throws -> Running {
        try await NIOThreadPool.singleton.runIfActive {
            if !FileManager.default.fileExists(atPath: dataDirectory + "/PG_VERSION") {
                try prepareDirectory(dataDirectory, mode: 0o700)
                logger.info(
                    "copying the primary with pg_basebackup",
                    metadata: ["dataDirectory": "\(dataDirectory)", "primaryPort": "\(primary.port)"])
                try run(
                    try binaries.tool("pg_basebackup"),
                    [
                        "-D", dataDirectory, "-R", "-X", "stream", "--checkpoint=fast", "-h", primary.socketDirectory,
                        "-p", String(primary.port), "-U", primary.superuser,
                    ],
                    what: "pg_basebackup")
            }
            return try startBlocking()
        }
    }

    /// Where the cluster listens when it runs; nil when it does not (nothing is started).
    public func attach() async throws -> Running? {
        try await NIOThreadPool.singleton.runIfActive { try attachIfRunning() }
    }

    /// Stops the cluster (fast shutdown: sessions are disconnected, no data is lost).
    public func stop() async throws {
        try await NIOThreadPool.singleton.runIfActive { try stopBlocking() }
    }

    /// Stops the cluster from synchronous code (exit handlers).
    public func stopSynchronously() throws { try stopBlocking() }

    // MARK: Blocking work (run on NIO's blocking pool)

    private var runAsPostgres: Bool { geteuid() == 0 }
    private var superuser: String {
        runAsPostgres ? "postgres" : (ProcessInfo.processInfo.environment["USER"] ?? NSUserName())
    }
    private var dataDirectory: String { URL(fileURLWithPath: options.dataDirectory).standardizedFileURL.path }
    private var logFile: String { dataDirectory + ".log" }

    /// Unix socket paths are limited to about 100 bytes, so the socket lives in a short folder
    /// under /tmp named after the data directory, not under a deep checkout.
    private var socketDirectory: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in dataDirectory.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return "/tmp/.shopledger-\(String(hash, radix: 16).prefix(12))"
    }

    private func startBlocking() throws -> Running {
        let fileManager = FileManager.default
        let data = dataDirectory
        if let running = try attachIfRunning() { return running }

        if !fileManager.fileExists(atPath: data + "/PG_VERSION") {
            try prepareDirectory(data, mode: 0o700)
            logger.info("creating a private PostgreSQL cluster", metadata: ["dataDirectory": "\(data)"])
            try run(
                binaries.initdb,
                ["-D", data, "-U", superuser, "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"],
                what: "initdb")
        }
        try ensurePortFree(options.port)
        // Authentication is trust: whoever reaches the socket is the superuser. 0700 keeps other local
        // users out of the folder (its owner, the server's user, and root reach it).
        try prepareDirectory(socketDirectory, mode: 0o700)
        if !fileManager.fileExists(atPath: logFile) { _ = fileManager.createFile(atPath: logFile, contents: nil) }
        try handToPostgres(logFile)

        var settings: [String: String] = [
            "listen_addresses": "127.0.0.1",
            "port": String(options.port),
            "unix_socket_directories": socketDirectory,
            "max_connections": "200",
            "shared_buffers": "256MB",
            "max_wal_size": "4GB",
            "checkpoint_timeout": "15min",
        ]
        if options.durable {
            // pg_rewind can bring a primary that lost a failover back as a standby of the new one
            // (docs/operations.md, "Without Patroni"): it needs hint-bit changes in the WAL.
            settings["wal_log_hints"] = "on"
        } else {
            settings["fsync"] = "off"
            settings["synchronous_commit"] = "off"
            settings["full_page_writes"] = "off"
        }
        settings.merge(options.settings) { _, custom in custom }
        let serverOptions = settings.sorted { $0.key < $1.key }.map { "-c \($0.key)=\($0.value)" }.joined(
            separator: " ")
        logger.info(
            "starting private PostgreSQL", metadata: ["port": "\(options.port)", "socket": "\(socketDirectory)"])
        try run(
            binaries.pgCtl, ["-D", data, "-l", logFile, "-o", serverOptions, "-w", "-t", "60", "start"],
            what: "pg_ctl start")
        return Running(socketDirectory: socketDirectory, port: options.port, startedHere: true, superuser: superuser)
    }

    private func stopBlocking() throws {
        guard FileManager.default.fileExists(atPath: dataDirectory + "/postmaster.pid") else { return }
        try run(binaries.pgCtl, ["-D", dataDirectory, "-m", "fast", "-w", "-t", "60", "stop"], what: "pg_ctl stop")
    }

    /// When a server already runs on this data directory, reads where it listens from its
    /// `postmaster.pid` (line 4: port, line 5: socket directory).
    private func attachIfRunning() throws -> Running? {
        guard FileManager.default.fileExists(atPath: dataDirectory + "/PG_VERSION"),
            (try? run(binaries.pgCtl, ["-D", dataDirectory, "status"], what: "pg_ctl status")) != nil,
            let pidFile = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8)
        else { return nil }
        let lines = pidFile.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count > 4, let port = Int(lines[3]) else { return nil }
        let socket = String(lines[4])
        logger.info("reusing the private PostgreSQL that is already running", metadata: ["port": "\(port)"])
        return Running(
            socketDirectory: socket.isEmpty ? socketDirectory : socket, port: port, startedHere: false,
            superuser: superuser)
    }

    private func ensurePortFree(_ port: Int) throws {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if bound != 0 {
            throw LocalPostgresError(
                "port \(port) on 127.0.0.1 is taken by another program; choose another port (--db-port / SHOPLEDGER_DB_PORT) or stop that program"
            )
        }
    }

    /// Creates `path` (and parents) and, as root, gives it to the postgres user and makes sure that
    /// user can reach it: every ancestor gets the search (x) bit for others where it lacks it.
    private func prepareDirectory(_ path: String, mode: Int) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        try handToPostgres(path)
    }

    private func handToPostgres(_ path: String) throws {
        guard runAsPostgres else { return }
        guard let user = getpwnam("postgres") else {
            throw LocalPostgresError(
                "running as root needs the 'postgres' OS user (it comes with the postgresql package)")
        }
        guard chown(path, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
            throw LocalPostgresError("cannot hand \(path) to the postgres user: \(String(cString: strerror(errno)))")
        }
        var ancestor = URL(fileURLWithPath: path).deletingLastPathComponent()
        while ancestor.path != "/" {
            var info = stat()
            if stat(ancestor.path, &info) == 0, info.st_mode & S_IXOTH == 0, info.st_uid != user.pointee.pw_uid {
                logger.notice("letting the postgres user traverse \(ancestor.path) (adding o+x)")
                chmod(ancestor.path, info.st_mode | S_IXOTH)
            }
            ancestor.deleteLastPathComponent()
        }
    }

    /// Runs a PostgreSQL binary (as the postgres user when root), failing with its output.
    @discardableResult
    private func run(_ executable: String, _ arguments: [String], what: String) throws -> String {
        let outcome =
            runAsPostgres
            ? try ChildProcess.run(Binaries.runuser, ["-u", "postgres", "--", executable] + arguments)
            : try ChildProcess.run(executable, arguments)
        let text = outcome.output
        guard outcome.status == 0 else {
            var message = "\(what) failed (exit \(outcome.status)): \(text.trimmingTrailingNewlines())"
            if what == "pg_ctl start", let log = try? String(contentsOfFile: logFile, encoding: .utf8) {
                message +=
                    "\nlast lines of \(logFile):\n" + log.split(separator: "\n").suffix(8).joined(separator: "\n")
            }
            throw LocalPostgresError(message)
        }
        return text
    }
}

extension LocalPostgres {
    /// A PostgreSQL program (`initdb`, `pg_ctl`, `pgbench`, …): on PATH, or in Debian's versioned
    /// folders (/usr/lib/postgresql/N/bin, newest first); nil when not installed.
    public static func tool(_ name: String) -> String? {
        toolFolders().map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func toolFolders() -> [String] {
        var folders = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        let debian = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: debian)) ?? []
        folders += versions.compactMap { Int($0) }.sorted(by: >).map { "\(debian)/\($0)/bin" }
        return folders
    }
}

/// The server binaries: on PATH, or in Debian's versioned folder (/usr/lib/postgresql/N/bin).
struct Binaries: Sendable {
    static let runuser = "/usr/sbin/runuser"
    let initdb: String
    let pgCtl: String

    /// Another program of the same installation (`pg_basebackup`, ...): next to `pg_ctl` (or to what
    /// a `pg_ctl` symlink points at, as Debian's /usr/bin wrappers do).
    func tool(_ name: String) throws -> String {
        let pgCtlURL = URL(fileURLWithPath: pgCtl)
        let folders = [
            pgCtlURL.deletingLastPathComponent(), pgCtlURL.resolvingSymlinksInPath().deletingLastPathComponent(),
        ]
        guard
            let path = folders.map({ $0.appendingPathComponent(name).path }).first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else {
            throw LocalPostgresError(
                "\(name) was not found next to \(pgCtl); install it with: apt-get install -y postgresql")
        }
        return path
    }

    static func find() throws -> Binaries {
        // Both from one folder: one installation.
        for folder in LocalPostgres.toolFolders() {
            let initdb = folder + "/initdb"
            let pgCtl = folder + "/pg_ctl"
            if FileManager.default.isExecutableFile(atPath: initdb), FileManager.default.isExecutableFile(atPath: pgCtl)
            {
                return Binaries(initdb: initdb, pgCtl: pgCtl)
            }
        }
        throw LocalPostgresError(
            "PostgreSQL server binaries (initdb, pg_ctl) were not found on PATH or in /usr/lib/postgresql/*/bin; "
                + "install them with: apt-get install -y postgresql (or configure a database URL)")
    }
}

/// A failure to create, start or stop the private cluster, with a message meant for people.
public struct LocalPostgresError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(description: String) { self.description = description }
    init(_ description: String) { self.description = description }
}
