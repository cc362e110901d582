import ArgumentParser
import Foundation
import Ledger

/// The pgbackrest program, run to its end.
struct PgBackRestProgram {
    let path: String

    /// `program`: a path, or a name found in PATH.
    init(_ program: String) throws {
        if program.contains("/") {
            path = program
        } else {
            let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
            guard
                let found = folders.map({ "\($0)/\(program)" }).first(where: {
                    FileManager.default.isExecutableFile(atPath: $0)
                })
            else {
                throw ValidationError("\(program) is not in PATH; install pgbackrest or name it with --pgbackrest")
            }
            path = found
        }
    }

    /// Standard output when it exits 0; otherwise an error with what it wrote to standard error.
    func run(_ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Standard error is read on its own thread, so that neither pipe can fill while the other is read.
        let errorText = ErrorText()
        let reader = Thread { errorText.set(errors.fileHandleForReading.readDataToEndOfFile()) }
        reader.start()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let stderr = errorText.wait()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw PgBackRestInfo.Failure(
                description:
                    "\(path) \(arguments.joined(separator: " ")) failed (status \(process.terminationStatus)): "
                    + String(decoding: stderr, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return data
    }

    /// What a thread read, handed over once.
    private final class ErrorText: @unchecked Sendable {
        // @unchecked: `data` is written once before `done` is signalled and read only after waiting for it.
        private var data = Data()
        private let done = DispatchSemaphore(value: 0)

        func set(_ data: Data) {
            self.data = data
            done.signal()
        }

        func wait() -> Data {
            done.wait()
            return data
        }
    }
}
