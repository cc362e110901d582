import Foundation
import Postgres
import Synchronization

/// A child process started with the Postgres module's `ChildProcess.spawn` (Foundation's
/// `Process.waitUntilExit` was seen to hang off the main thread here), its output in a log file.
/// Its exit is noticed by polling `waitpid(WNOHANG)`, so no thread blocks on it.
final class Spawned: Sendable {
    enum Termination: Equatable, Sendable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        var description: String {
            switch self {
            case .exited(let code): "exit \(code)"
            case .signalled(let signal): "signal \(signal)"
            }
        }
    }

    let pid: pid_t
    let command: [String]
    let logPath: String
    private let termination = Mutex<Termination?>(nil)

    private init(pid: pid_t, command: [String], logPath: String) {
        self.pid = pid
        self.command = command
        self.logPath = logPath
    }

    /// Starts `command` (absolute path first) in `/tmp` with exactly `environment`, stdout and stderr
    /// appended to `logPath`.
    static func start(_ command: [String], environment: [String: String], logPath: String) throws -> Spawned {
        let pid = try ChildProcess.spawn(
            command, environment: environment, workingDirectory: "/tmp", output: logPath, append: true)
        return Spawned(pid: pid, command: command, logPath: logPath)
    }

    /// The environment of this test process without settings that would change what the child does
    /// (`SHOPLEDGER_*`, the deprecated `LOG_LEVEL`, libpq's `PG*`), plus `extra`.
    static func environment(_ extra: [String: String]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { key, _ in
            !key.hasPrefix("SHOPLEDGER_") && key != "LOG_LEVEL" && !key.hasPrefix("PG")
        }
        environment.merge(extra) { _, new in new }
        return environment
    }

    func signal(_ signal: Int32) {
        if termination.withLock({ $0 == nil }) { kill(pid, signal) }
    }

    /// How it ended, if it has (reaps it the first time).
    var exit: Termination? {
        termination.withLock { termination in
            if let termination { return termination }
            var status: Int32 = 0
            guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
            // WIFEXITED/WEXITSTATUS/WTERMSIG are macros Swift does not import.
            termination = (status & 0x7f) == 0 ? .exited((status >> 8) & 0xff) : .signalled(status & 0x7f)
            return termination
        }
    }

    /// Waits at most `timeout` for the process to end.
    func waitForExit(timeout: Duration) async -> Termination? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let exit { return exit }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return exit
    }

    /// SIGKILL and reap; for clean-up, when the process must be gone whatever happened.
    func killAndReap() {
        guard exit == nil else { return }
        kill(pid, SIGKILL)
        termination.withLock { termination in
            guard termination == nil else { return }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            termination = .signalled(SIGKILL)
        }
    }

    /// The last `lines` lines of its log, for failure messages.
    func logTail(_ lines: Int = 30) -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "(no log)"
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    /// Runs `command` to its end (polling, so no thread blocks); its output is returned.
    static func run(
        _ command: [String], environment: [String: String] = Spawned.environment([:]), timeout: Duration = .seconds(120)
    )
        async throws -> (status: Termination, output: String)
    {
        let logPath = NSTemporaryDirectory() + "shopledger-fault-run-\(UUID().uuidString).out"
        defer { unlink(logPath) }
        let child = try start(command, environment: environment, logPath: logPath)
        guard let status = await child.waitForExit(timeout: timeout) else {
            child.killAndReap()
            throw FaultTestError("\(command.joined(separator: " ")) did not finish within \(timeout)")
        }
        return (status, (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")
    }
}
