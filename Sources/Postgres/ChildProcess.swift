import Foundation

/// Runs a program to completion with `posix_spawn` and `waitpid`, collecting its output through
/// a temporary file. (Foundation's `Process.waitUntilExit` was seen to hang here when called off
/// the main thread; and a pipe could stay open in a daemon the program leaves behind, such as the
/// postmaster that `pg_ctl start` launches.)
enum ChildProcess {
    struct Outcome {
        let status: Int32
        let output: String
    }

    static func run(_ executable: String, _ arguments: [String], workingDirectory: String = "/tmp") throws -> Outcome {
        let outputPath = NSTemporaryDirectory() + "shopledger-\(UUID().uuidString).out"
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Start in a directory every user can enter (the postgres user may not enter ours), via
        // the shell's `cd`, as glibc's posix_spawn_file_actions_addchdir_np is not imported.
        let command = ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", workingDirectory, executable] + arguments
        let argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, nil, argv, environ)
        guard spawned == 0 else {
            throw LocalPostgresError("cannot start \(executable): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { throw LocalPostgresError("waiting for \(executable) failed: \(String(cString: strerror(errno)))") }
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // WIFEXITED/WEXITSTATUS are macros Swift does not import.
        let exitCode = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Outcome(status: exitCode, output: output)
    }
}
