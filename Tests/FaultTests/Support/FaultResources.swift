import Foundation
import Synchronization

/// What the fault scenarios leave running outside the test process (a `shopledger serve` child, a
/// PostgreSQL cluster), so that none outlives the tests, even when a test fails:
///
/// - each scenario releases its own in a `defer`-like path (`FaultScenario.run`);
/// - an exit handler kills what is still registered when the test process exits;
/// - a process that died without running it (SIGKILL, a crash) leaves `/tmp/shopledger-fault-<pid>-*`
///   folders behind: the next run finds them by their dead pid, kills the server whose pid is in
///   `server.pid`, stops the cluster and removes the folder.
enum FaultResources {
    private struct Registry {
        var folders: Set<String> = []
        var servers: [pid_t: String] = [:]
        var exitHandlerInstalled = false
        var counter = 0
    }

    private static let registry = Mutex(Registry())
    static let folderPrefix = "/tmp/shopledger-fault-"

    /// A new folder for a scenario, after clearing what dead earlier runs left behind.
    static func newFolder() throws -> String {
        let number = registry.withLock { registry -> Int in
            if !registry.exitHandlerInstalled {
                registry.exitHandlerInstalled = true
                sweepStale()
                atexit { FaultResources.releaseAll() }
            }
            registry.counter += 1
            return registry.counter
        }
        let folder = "\(folderPrefix)\(getpid())-\(number)"
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // The cluster runs as the postgres user when we are root: it must be able to enter.
        chmod(folder, 0o755)
        return folder
    }

    static func register(folder: String) {
        registry.withLock { _ = $0.folders.insert(folder) }
    }

    static func register(server pid: pid_t, folder: String) {
        registry.withLock { $0.servers[pid] = folder }
        // One line per process (several servers, a load balancer): a later run kills each.
        if let file = FileHandle(forWritingAtPath: folder + "/server.pid")
            ?? {
                FileManager.default.createFile(atPath: folder + "/server.pid", contents: nil)
                return FileHandle(forWritingAtPath: folder + "/server.pid")
            }()
        {
            file.seekToEndOfFile()
            file.write(Data("\(pid)\n".utf8))
            try? file.close()
        }
    }

    static func release(server pid: pid_t) {
        registry.withLock { _ = $0.servers.removeValue(forKey: pid) }
    }

    /// Stops the clusters in `folder` (immediately: they are thrown away) and removes the folder.
    static func release(folder: String) {
        registry.withLock { _ = $0.folders.remove(folder) }
        for dataDirectory in clusters(in: folder) { stopCluster(dataDirectory: dataDirectory) }
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// The socket folder a running cluster names in its postmaster.pid (line 5), when it is one that
    /// `LocalPostgres` made under /tmp (it leaves it when the cluster stops).
    static func socketFolder(dataDirectory: String) -> String? {
        let lines = ((try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8)) ?? "").split(
            separator: "\n", omittingEmptySubsequences: false)
        guard lines.count > 4, lines[4].hasPrefix("/tmp/.shopledger-") else { return nil }
        return String(lines[4])
    }

    /// The scenario's own cluster (`data`) and those a scenario had `shopledger` start in a private
    /// folder of its (`<folder>/<private>/postgres`, `.../standby`): every folder two levels down at most.
    private static func clusters(in folder: String) -> [String] {
        let children = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).map { folder + "/" + $0 }
        let grandchildren = children.flatMap { child in
            ((try? FileManager.default.contentsOfDirectory(atPath: child)) ?? []).map { child + "/" + $0 }
        }
        return (children + grandchildren).filter { FileManager.default.fileExists(atPath: $0 + "/postmaster.pid") }
    }

    private static func releaseAll() {
        let (servers, folders) = registry.withLock { ($0.servers, $0.folders) }
        for pid in servers.keys { killServer(pid) }
        for folder in folders { release(folder: folder) }
    }

    /// Folders of test processes that are gone.
    private static func sweepStale() {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []
        for name in names where ("/tmp/" + name).hasPrefix(folderPrefix) {
            let owner = name.dropFirst(folderPrefix.count - "/tmp/".count).split(separator: "-").first.flatMap {
                pid_t($0)
            }
            guard let owner, owner != getpid(), kill(owner, 0) != 0 else { continue }
            let folder = "/tmp/" + name
            let text = (try? String(contentsOfFile: folder + "/server.pid", encoding: .utf8)) ?? ""
            for pid in text.split(separator: "\n").compactMap({ pid_t($0) }) { killServer(pid) }
            for dataDirectory in clusters(in: folder) { stopCluster(dataDirectory: dataDirectory) }
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    /// SIGKILL, if `pid` is still a shopledger process or a load balancer started with a configuration in a
    /// fault folder (pids are reused).
    private static func killServer(_ pid: pid_t) {
        guard let commandLine = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"),
            String(decoding: commandLine, as: UTF8.self).contains("shopledger")
        else { return }
        kill(pid, SIGKILL)
    }

    /// `pg_ctl stop -m immediate`, synchronously (exit handlers cannot await), when a postmaster runs there.
    private static func stopCluster(dataDirectory: String) {
        guard FileManager.default.fileExists(atPath: dataDirectory + "/postmaster.pid"),
            let pgCtl = PostgresBinaries.pgCtlPath
        else {
            return
        }
        let socket = socketFolder(dataDirectory: dataDirectory)
        defer { if let socket { try? FileManager.default.removeItem(atPath: socket) } }
        let command = geteuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--", pgCtl] : [pgCtl]
        guard
            let child = try? Spawned.start(
                command + ["-D", dataDirectory, "-m", "immediate", "-w", "-t", "30", "stop"],
                environment: Spawned.environment([:]),
                logPath: "/dev/null")
        else { return }
        var status: Int32 = 0
        while waitpid(child.pid, &status, 0) == -1 && errno == EINTR {}
    }
}
