import Foundation
import Ledger
import Logging
import Postgres
import Synchronization

/// The PostgreSQL server the test process uses, and a migrated template database from which
/// each test gets a database of its own (so suites run in parallel and never see each other's rows).
///
/// With `SHOPLEDGER_TEST_DATABASE_URL` set (a server where the user may create databases), tests use
/// that server. Otherwise the process starts a throwaway private cluster (the same `LocalPostgres`
/// code `shopledger` uses) in a temporary folder, and stops and removes it when the process exits.
public actor TestCluster {
    public static let shared = TestCluster()

    private var serverURL: String?
    private var admin: PostgresClient?
    private var counter = 0
    private let templateName = "shopledger_template"
    let logger: Logger = {
        var logger = Logger(label: "shopledger.tests")
        logger.logLevel = .warning
        return logger
    }()

    /// A URL for `database` on the test server, starting the server and the template first.
    func url(database: String) async throws -> String {
        let server = try await start()
        return Self.replaceDatabase(in: server, with: database)
    }

    /// Creates a fresh database from the migrated template; its name is unique in this process.
    func createDatabase(prefix: String) async throws -> String {
        _ = try await start()
        counter += 1
        let safePrefix = prefix.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(30)
        let name = "t_\(safePrefix)_\(ProcessInfo.processInfo.processIdentifier)_\(counter)"
        try await admin!.query(
            PostgresQuery(unsafeSQL: "CREATE DATABASE \(PostgresQuery.quoteIdentifier(name)) TEMPLATE \(templateName)"))
        return name
    }

    func dropDatabase(_ name: String) async {
        _ = try? await admin?.query(
            PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(PostgresQuery.quoteIdentifier(name)) WITH (FORCE)"))
    }

    /// The local cluster, when this process started one (tests that restart the server need it).
    public private(set) var local: LocalPostgres?

    private var starting: Task<String, any Error>?

    /// Starts the server and the template once, however many tests ask at the same time.
    private func start() async throws -> String {
        if let serverURL { return serverURL }
        if let starting { return try await starting.value }
        let task = Task { try await self.startOnce() }
        starting = task
        return try await task.value
    }

    private func startOnce() async throws -> String {
        let url: String
        if let configured = ProcessInfo.processInfo.environment["SHOPLEDGER_TEST_DATABASE_URL"], !configured.isEmpty {
            url = configured
        } else {
            let directory = "/tmp/shopledger-test-\(ProcessInfo.processInfo.processIdentifier)/data"
            let cluster = try LocalPostgres(
                options: .init(
                    dataDirectory: directory, port: try Self.freePort(), durable: false,
                    // Every suite runs at once, each test with a pool of its own (and the webhook tests with
                    // delivery workers' pools too): 200 connections ran out in a loaded clean clone's run
                    // ("sorry, too many clients already").
                    settings: ["max_connections": "500"]),
                logger: logger)
            let running = try await cluster.start()
            local = cluster
            ExitCleanup.register(cluster: cluster, folder: (directory as NSString).deletingLastPathComponent)
            url = running.url(database: "postgres")
        }
        // CREATE DATABASE takes 0.5–2 s each when many tests start at once on 2 busy cores; the
        // admin pool must let them queue rather than time out.
        let admin = PostgresClient(
            configuration: .init(
                connection: .init(url: url), minimumConnections: 0, maximumConnections: 3, leaseTimeout: .seconds(300)),
            logger: logger)
        try await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(templateName) WITH (FORCE)"))
        try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(templateName)"))
        let template = PostgresClient(
            configuration: .init(
                connection: .init(url: Self.replaceDatabase(in: url, with: templateName)), minimumConnections: 0,
                maximumConnections: 1),
            logger: logger)
        try await LedgerSchema.migrator(logger: logger).migrate(template)
        await template.shutdown()
        self.admin = admin
        self.serverURL = url
        return url
    }

    /// Replaces the database of a `postgresql:///db?…` or `postgresql://host/db?…` URL.
    public static func replaceDatabase(in url: String, with database: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url + " dbname=\(database)" }
        let afterScheme = url[schemeEnd.upperBound...]
        guard let slash = afterScheme.firstIndex(of: "/") else { return url + "/\(database)" }
        let rest = url[url.index(after: slash)...]
        let queryStart = rest.firstIndex(of: "?") ?? rest.endIndex
        return String(url[..<url.index(after: slash)]) + database + String(rest[queryStart...])
    }

    /// An unused TCP port on 127.0.0.1 below the kernel's ephemeral range
    /// (`/proc/sys/net/ipv4/ip_local_port_range`, 32768 and up by default).
    ///
    /// Not a port the kernel assigns (port 0): those come from the ephemeral range, where every outgoing
    /// connection takes its local port too. The half-open scenario holds thousands of such connections
    /// while other scenarios start servers; a server given a port one of them held failed to start with
    /// "Address already in use" (seen in a clean-clone `make test`). Below the range no connection takes
    /// a port by itself; a random one is tried until one binds.
    public static func freePort() throws -> Int {
        let ephemeralStart =
            (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))
            .flatMap { $0.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } } ?? 32768
        let candidates = 10_000..<max(10_001, min(ephemeralStart, 65_536))
        for _ in 0..<200 {
            let port = Int.random(in: candidates)
            // Never the same port twice in one test process: two scenarios starting at once would race for it.
            guard handedOut.withLock({ $0.insert(port).inserted }) else { continue }
            if canBind(port) { return port }
        }
        throw LocalPostgresError(description: "no free port on 127.0.0.1 in \(candidates)")
    }

    private static let handedOut = Mutex<Set<Int>>([])

    /// Whether a listening socket could bind `port` on 127.0.0.1 now (the socket is closed again).
    private static func canBind(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 }
        }
    }
}

/// Stops the throwaway cluster when the test process exits.
enum ExitCleanup {
    nonisolated(unsafe) private static var cluster: LocalPostgres?
    nonisolated(unsafe) private static var folder: String?

    static func register(cluster: LocalPostgres, folder: String) {
        // Written once, before any exit can run the handler; read only by the handler.
        self.cluster = cluster
        self.folder = folder
        atexit {
            try? ExitCleanup.cluster?.stopSynchronously()
            if let folder = ExitCleanup.folder { try? FileManager.default.removeItem(atPath: folder) }
        }
    }
}
