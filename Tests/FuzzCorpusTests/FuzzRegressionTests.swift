import Foundation
import FuzzTargets
import Testing

/// Every input that once crashed or hung a fuzz target (`Fuzz/regressions/<target>/`), replayed by the
/// built `shopledger-fuzz` in a process of its own, so that a crash fails this one test instead of the
/// whole test run. Inputs whose fix has not landed yet are known issues (``FuzzRegressionTests/open``): the
/// test fails once they pass, so that they leave the list.
@Suite struct FuzzRegressionTests {
    /// A regression input that still crashes or hangs, and why. Replayed without the Swift backtracer (a
    /// symbolicated backtrace takes seconds); a new failure gets one.
    static let open: [String: String] = [:]

    /// How long one replay may take (a debug build verifies a receipt in well under a second).
    static let deadline: Duration = .seconds(30)

    static let inputs: [RegressionInput] = FuzzTarget.allCases.flatMap { target in
        FuzzFiles.inputs(in: FuzzFiles.regressions(target)).map { RegressionInput(target: target, file: $0) }
    }

    @Test(arguments: inputs)
    func regressionReplays(_ input: RegressionInput) async throws {
        if let reason = Self.open[input.description] {
            await withKnownIssue("\(input) still fails: \(reason)") {
                try await Self.replay(input, backtrace: false)
            }
        } else {
            try await Self.replay(input, backtrace: true)
        }
    }

    static func replay(_ input: RegressionInput, backtrace: Bool) async throws {
        let run = try await ReplayProcess.run(
            target: input.target, file: input.file, deadline: deadline, backtrace: backtrace)
        #expect(!run.timedOut, "\(input) ran past \(deadline): \(run.outputTail)")
        #expect(run.status == 0, "\(input) exited with \(run.status):\n\(run.outputTail)")
    }
}

/// One file of `Fuzz/regressions/<target>/`.
struct RegressionInput: Sendable, CustomTestStringConvertible, CustomStringConvertible {
    let target: FuzzTarget
    let file: URL

    var description: String { "\(target.rawValue)/\(file.lastPathComponent)" }
    var testDescription: String { description }
}

/// The uninstrumented `shopledger-fuzz` (built beside the tests by `swift build --build-tests`) replaying one file.
struct ReplayProcess {
    let status: Int32
    let timedOut: Bool
    let output: String

    /// The last lines of what it printed: the trap's message and backtrace.
    var outputTail: String { output.split(separator: "\n").suffix(40).joined(separator: "\n") }

    struct NoBinary: Error, CustomStringConvertible {
        let path: String
        var description: String { "no shopledger-fuzz at \(path); build it (swift build --build-tests)" }
    }

    static func binary() throws -> String {
        let executable =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let path = URL(fileURLWithPath: executable).deletingLastPathComponent()
            .appendingPathComponent("shopledger-fuzz").path
        guard FileManager.default.isExecutableFile(atPath: path) else { throw NoBinary(path: path) }
        return path
    }

    static func run(target: FuzzTarget, file: URL, deadline: Duration, backtrace: Bool) async throws -> ReplayProcess {
        let outputURL = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shopledger-fuzz-replay-\(UUID().uuidString).log")
        FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: outputURL) }
        let output = try FileHandle(forWritingTo: outputURL)
        defer { try? output.close() }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: try binary())
        process.arguments = [target.rawValue, file.path]
        var environment = ProcessInfo.processInfo.environment
        environment["SHOPLEDGER_FUZZ_DIR"] = FuzzFiles.root.path
        if !backtrace { environment["SWIFT_BACKTRACE"] = "enable=no" }
        process.environment = environment
        process.standardOutput = output
        process.standardError = output
        try process.run()

        let clock = ContinuousClock()
        let end = clock.now.advanced(by: deadline)
        var timedOut = false
        while process.isRunning {
            if clock.now >= end {
                timedOut = true
                kill(process.processIdentifier, SIGKILL)
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        process.waitUntilExit()
        let text = (try? String(contentsOf: outputURL, encoding: .utf8)) ?? ""
        return ReplayProcess(status: process.terminationStatus, timedOut: timedOut, output: text)
    }
}
