import Foundation

/// A pgBackRest repository of a scenario's own, for one cluster (the stanza `shopledger`), configured by
/// the shipped deploy/pgbackrest/pgbackrest.conf with only its places and its passphrase replaced: the
/// configuration file, repository, log and lock folders all under `folder`, none in the system's
/// places (/etc/pgbackrest, /var/lib/pgbackrest, /var/log/pgbackrest, /tmp/pgbackrest). Every
/// command runs as the `postgres` user when the tests run as root, as the cluster does: WAL is
/// pushed by PostgreSQL's `archive_command`, and a restored data folder must be that user's.
struct BackupRepository: Sendable {
    static let stanza = "shopledger"
    /// The repository's passphrase here (the shipped file leaves it empty, which pgBackRest refuses).
    static let cipherPass = "fault-tests-repository-passphrase-0123456789"

    let folder: String
    /// The cluster backed up: its data folder, port and socket folder.
    let dataDirectory: String
    let port: Int
    let socketDirectory: String
    let configFile: String

    var repositoryPath: String { folder + "/repo" }

    /// What PostgreSQL runs for each finished WAL segment (`archive_command`).
    var archiveCommand: String {
        "pgbackrest --config=\(configFile) --stanza=\(Self.stanza) archive-push %p"
    }

    /// deploy/pgbackrest/pgbackrest.conf, as shipped.
    static var shippedConfiguration: String {
        get throws {
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().deletingLastPathComponent()
            return try String(
                contentsOf: root.appendingPathComponent("deploy/pgbackrest/pgbackrest.conf"), encoding: .utf8)
        }
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
        for path in [folder, folder + "/repo", folder + "/log", folder + "/lock"] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            try handToPostgres(path, mode: path == folder ? 0o755 : 0o750)
        }
        return try BackupRepository(
            folder: folder, dataDirectory: dataDirectory, port: port, socketDirectory: socketDirectory,
            configFile: folder + "/pgbackrest.conf"
        ).writingConfiguration()
    }

    /// The same repository and stanza for another cluster: a restored copy promoted to be the primary.
    /// Its own configuration file, as an operator would edit pg1-path and pg1-port in the one file.
    func pointed(at dataDirectory: String, port: Int, socketDirectory: String) throws -> BackupRepository {
        try BackupRepository(
            folder: folder, dataDirectory: dataDirectory, port: port, socketDirectory: socketDirectory,
            configFile: folder + "/pgbackrest-\(port).conf"
        ).writingConfiguration()
    }

    /// The shipped file, its places, port and passphrase replaced, written to `configFile`. Every key
    /// replaced must be in it: a shipped file that loses one fails here rather than testing another.
    private func writingConfiguration() throws -> BackupRepository {
        var replacements = [
            "repo1-path": repositoryPath, "log-path": folder + "/log", "repo1-cipher-pass": Self.cipherPass,
            "pg1-path": dataDirectory, "pg1-port": String(port), "pg1-socket-path": socketDirectory,
        ]
        var lines: [String] = []
        for line in try Self.shippedConfiguration.split(separator: "\n", omittingEmptySubsequences: false) {
            let key = line.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            if let value = replacements.removeValue(forKey: key) {
                lines.append("\(key)=\(value)")
            } else {
                lines.append(String(line))
            }
            // The lock folder has no line in the shipped file (pgBackRest's default, /tmp/pgbackrest, is right there).
            if line == "[global]" { lines.append("lock-path=\(folder)/lock") }
        }
        guard replacements.isEmpty else {
            throw FaultTestError("deploy/pgbackrest/pgbackrest.conf has no line for \(replacements.keys.sorted())")
        }
        try lines.joined(separator: "\n").write(toFile: configFile, atomically: true, encoding: .utf8)
        try Self.handToPostgres(configFile, mode: 0o640)
        return self
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

    /// `shopledger backups record` for the cluster at `databaseURL`, with this configuration, as the
    /// `postgres` user when root (as shopledger-backup@.service runs it); fails with its output unless
    /// it exits 0. Returns the output.
    @discardableResult
    func record(databaseURL: String) async throws -> String {
        let command = [
            try binaryForPostgres(), "backups", "record", "--stanza", Self.stanza, "--pgbackrest", try Self.binary(),
            "--pgbackrest-config", configFile, "--database-url", databaseURL,
        ]
        let asPostgres = geteuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--"] + command : command
        var (status, output) = try await Spawned.run(asPostgres)
        // A copied binary (no link across file systems) may be "busy" for a moment: see binaryForPostgres.
        for _ in 0..<5 where status != .exited(0) && output.contains("Text file busy") {
            try await Task.sleep(for: .milliseconds(200))
            (status, output) = try await Spawned.run(asPostgres)
        }
        guard status == .exited(0) else {
            throw FaultTestError("shopledger backups record failed (\(status)):\n\(output)")
        }
        return output
    }

    /// The shopledger binary where the `postgres` user can run it. A clean clone is often in a folder only
    /// root may enter (`mktemp -d` makes it 0700), so the build's own path is out of postgres' reach: when
    /// root, the binary is linked beside the configuration, in the scenario's folder postgres already uses.
    /// A hard link, not a copy: a copy just written can fail to execute with "Text file busy" while a
    /// process another test forks at that moment still holds the copy's write descriptor (seen in run D).
    /// Across file systems, where no link can be made, a copy, run with retries (`record`).
    private func binaryForPostgres() throws -> String {
        let binary = try ServerProcess.binary()
        guard geteuid() == 0 else { return binary }
        let place = (configFile as NSString).deletingLastPathComponent + "/shopledger-for-postgres"
        guard !FileManager.default.fileExists(atPath: place) else { return place }
        if link(binary, place) != 0 {
            try FileManager.default.copyItem(atPath: binary, toPath: place)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: place)
        return place
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
