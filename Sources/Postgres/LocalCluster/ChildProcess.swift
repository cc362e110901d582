import Foundation

/// Starts programs with `posix_spawn` and waits for them with `waitpid`; output goes to a file.
/// (Foundation's `Process.waitUntilExit` was seen to hang here when called off the main thread; and a
/// pipe could stay open in a daemon the program leaves behind, such as the postmaster that `pg_ctl
/// start` launches.) Used by `LocalPostgres`, the fault tests (the server they kill) and the
/// benchmarks (pgbench).
public enum ChildProcess {
    struct Outcome {
        let status: Int32
        let output: String
    }

    /// Runs a program to completion, blocking the calling thread; its output (stdout and stderr).
    static func run(_ executable: String, _ arguments: [String], workingDirectory: String = "/tmp") throws -> Outcome {
        let outputPath = NSTemporaryDirectory() + "shopledger-\(UUID().uuidString).out"
        defer { unlink(outputPath) }
        let pid = try spawn(
            [executable] + arguments, environment: nil, workingDirectory: workingDirectory, output: outputPath,
            append: false)
        let status = try waitForExit(pid, executable: executable)
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return Outcome(status: status, output: output)
    }

    /// Starts `command` (the program first) in `workingDirectory` with `environment` (nil: this
    /// process's), stdin from /dev/null, stdout and stderr to `output`. The child starts with no signal
    /// blocked and SIGPIPE at its default: Swift's threads block signals such as SIGALRM and SIGTERM,
    /// and a child inheriting that mask ignores them (pgbench's `-T` timer never fired).
    public static func spawn(
        _ command: [String], environment: [String: String]?, workingDirectory: String, output: String, append: Bool
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0o600)
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
        // Start in a directory every user can enter (the postgres user may not enter ours) via the
        // shell's `cd`, as glibc's posix_spawn_file_actions_addchdir_np is not imported; `exec` keeps
        // the pid, so signals reach the program itself.
        let argv = ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", workingDirectory] + command
        let cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid = pid_t()
        let spawned: Int32
        if let environment {
            let cEnvironment: [UnsafeMutablePointer<CChar>?] =
                environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer { cEnvironment.forEach { free($0) } }
            spawned = posix_spawn(&pid, "/bin/sh", &actions, &attributes, cArguments, cEnvironment)
        } else {
            spawned = posix_spawn(&pid, "/bin/sh", &actions, &attributes, cArguments, environ)
        }
        guard spawned == 0 else {
            throw LocalPostgresError("cannot start \(command[0]): \(String(cString: strerror(spawned)))")
        }
        return pid
    }

    /// Blocks the calling thread until `pid` exits; its exit code (128 + the signal when killed).
    public static func waitForExit(_ pid: pid_t, executable: String) throws -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else {
                throw LocalPostgresError("waiting for \(executable) failed: \(String(cString: strerror(errno)))")
            }
        }
        return exitCode(status)
    }

    /// A `waitpid` status as an exit code, 128 + the signal for a killed program. (WIFEXITED and
    /// WEXITSTATUS are macros Swift does not import.)
    public static func exitCode(_ status: Int32) -> Int32 {
        (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}
