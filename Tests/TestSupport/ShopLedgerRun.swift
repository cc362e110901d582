import Foundation

/// The built `shopledger` binary run as an operator runs it: its exit status and everything it
/// printed (standard output and error together, unless asked to keep them apart).
public struct ShopLedgerRun: Sendable {
    public let status: Int32
    /// Standard output and error together; standard output alone when run with `separatingErrors`.
    public let output: String
    /// Standard error, when run with `separatingErrors` (a script reads JSON from standard output only).
    public var errors = ""

    struct NoBinary: Error, CustomStringConvertible {
        let searched: [String]
        var description: String { "no shopledger binary at \(searched); build it (swift build --build-tests)" }
    }

    /// `SHOPLEDGER_BINARY`, else the binary beside the test bundle, else `.build/debug/shopledger`.
    public static func binary() throws -> String {
        if let configured = ProcessInfo.processInfo.environment["SHOPLEDGER_BINARY"], !configured.isEmpty {
            return configured
        }
        let executable =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let candidates = [
            URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("shopledger").path,
            FileManager.default.currentDirectoryPath + "/.build/debug/shopledger",
        ]
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw NoBinary(searched: candidates)
        }
        return found
    }

    /// Runs the binary with `arguments` and `environment` added to this process's (without its
    /// `SHOPLEDGER_*` variables), without blocking a concurrency thread while it runs.
    public static func run(
        _ arguments: [String], environment: [String: String] = [:], separatingErrors: Bool = false
    ) async throws -> ShopLedgerRun {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shopledger-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let outputPath = folder.appendingPathComponent("output").path
        FileManager.default.createFile(atPath: outputPath, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        let errorsPath = folder.appendingPathComponent("errors").path
        FileManager.default.createFile(atPath: errorsPath, contents: nil)
        let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: errorsPath))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try binary())
        process.arguments = arguments
        var variables = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SHOPLEDGER_") }
        variables["SHOPLEDGER_LOG_LEVEL"] = "error"
        variables.merge(environment) { $1 }
        process.environment = variables
        process.standardOutput = output
        process.standardError = separatingErrors ? errors : output
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        try output.close()
        try errors.close()
        return ShopLedgerRun(
            status: status, output: (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "",
            errors: (try? String(contentsOfFile: errorsPath, encoding: .utf8)) ?? "")
    }
}
