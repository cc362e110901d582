import Foundation

/// A pgBackRest repository of a scenario's own, for one cluster (the stanza `shopledger`): its
/// configuration file, repository, log and lock folders all under `folder`, none in the system's
/// places (/etc/pgbackrest, /var/lib/pgbackrest, /var/log/pgbackrest, /tmp/pgbackrest). Every
/// command runs as the `postgres` user when the tests run as root, as the cluster does: WAL is
/// pushed by PostgreSQL's `archive_command`, and a restored data folder must be that user's.
struct BackupRepository: Sendable {
    static let stanza = "shopledger"

    let folder: String
    /// The cluster backed up: its data folder, port and socket folder.
    let dataDirectory: String
    let port: Int
    let socketDirectory: String

    var configFile: String { folder + "/pgbackrest.conf" }
    var repositoryPath: String { folder + "/repo" }

    /// What PostgreSQL runs for each finished WAL segment (`archive_command`).
    var archiveCommand: String {
        "pgbackrest --config=\(configFile) --stanza=\(Self.stanza) archive-push %p"
    }

    /// pgBackRest on PATH (Debian's `pgbackrest` package: `scripts/install-deps.sh --for test`).
    static func binary() throws -> String {
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        guard
            let found = (folders + ["/usr/bin"]).map({ $0 + "/pgbackrest" }).first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else {
            throw FaultTestError(
                "pgbackrest was not found on PATH; install it with: apt-get install -y pgbackrest "
                    + "(scripts/install-deps.sh --for test does)")
        }
        return found
    }

    /// Writes the configuration and makes the folders (the `postgres` user's when root).
    static func create(
        in folder: String, dataDirectory: String, port: Int, socketDirectory: String
    ) throws -> BackupRepository {
        let repository = BackupRepository(
            folder: folder, dataDirectory: dataDirectory, port: port, socketDirectory: socketDirectory)
        for path in [folder, repository.repositoryPath, folder + "/log", folder + "/lock"] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            try handToPostgres(path, mode: path == folder ? 0o755 : 0o750)
        }
        // lz4 rather than the default gz: the drill is about the restore, not the repository's size.
        // start-fast: the backup asks for an immediate checkpoint instead of waiting for the next one.
        let configuration = """
            [global]
            repo1-path=\(repository.repositoryPath)
            log-path=\(folder)/log
            lock-path=\(folder)/lock
            log-level-file=detail
            compress-type=lz4
            start-fast=y

            [\(stanza)]
            pg1-path=\(dataDirectory)
            pg1-port=\(port)
            pg1-socket-path=\(socketDirectory)

            """
        try configuration.write(toFile: repository.configFile, atomically: true, encoding: .utf8)
        try handToPostgres(repository.configFile, mode: 0o640)
        return repository
    }

    /// `pgbackrest --config=… --stanza=shopledger <arguments>`, as the `postgres` user when root;
    /// fails with its output unless it exits 0. Returns the output.
    @discardableResult
    func run(_ arguments: [String], timeout: Duration = .seconds(120)) async throws -> String {
        let command = [try Self.binary(), "--config=\(configFile)", "--stanza=\(Self.stanza)"] + arguments
        let asPostgres = geteuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--"] + command : command
        let (status, output) = try await Spawned.run(asPostgres, timeout: timeout)
        guard status == .exited(0) else {
            throw FaultTestError("pgbackrest \(arguments.joined(separator: " ")) failed (\(status)):\n\(output)")
        }
        return output
    }

    /// A new, empty data folder for a restore: mode 0700, the `postgres` user's when root.
    static func emptyDataFolder(_ path: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try handToPostgres(path, mode: 0o700)
    }

    private static func handToPostgres(_ path: String, mode: Int) throws {
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        guard geteuid() == 0 else { return }
        guard let user = getpwnam("postgres") else {
            throw FaultTestError("running as root needs the 'postgres' OS user (it comes with the postgresql package)")
        }
        guard chown(path, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
            throw FaultTestError("cannot hand \(path) to the postgres user: \(String(cString: strerror(errno)))")
        }
    }
}
