import Foundation
import NIOCore
import NIOHTTP1
import TestSupport

/// The real `shopledger serve` binary, run as a child process on a port of its own against a
/// `FaultCluster`, configured by flags and `SHOPLEDGER_*` variables as an operator would.
struct ServerProcess: Sendable {
    let child: Spawned
    let port: Int
    let folder: String
    let baseURL: String

    /// The binary built next to this test bundle (`swift build --build-tests` builds it), or
    /// `$SHOPLEDGER_BINARY`.
    static func binary() throws -> String {
        if let configured = ProcessInfo.processInfo.environment["SHOPLEDGER_BINARY"], !configured.isEmpty {
            return configured
        }
        let executable =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var candidates = [
            URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("shopledger").path
        ]
        candidates.append(FileManager.default.currentDirectoryPath + "/.build/debug/shopledger")
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw FaultTestError(
                "the shopledger binary was not found (looked at \(candidates.joined(separator: ", "))); "
                    + "build it with `swift build --build-tests` or set SHOPLEDGER_BINARY")
        }
        return found
    }

    /// Starts `shopledger serve` and waits until `/readyz` answers 200.
    ///
    /// - Parameters:
    ///   - options: extra flags (`--shutdown-grace`, `--request-timeout`, ...).
    ///   - binary: another `shopledger` than `binary()` (the release artifact's, unpacked).
    ///   - environment: `SHOPLEDGER_*` settings (and others) on top of the scenario's.
    ///   - logLevel: `SHOPLEDGER_LOG_LEVEL`; `info` writes a line per request.
    ///   - development: `--dev-auth` and `--stub-receipts` (every scenario's clients use them); false for a
    ///     server configured as in production, whose users sign in with Firebase tokens (give the options).
    static func start(
        databaseURL: String, folder: String, port: Int? = nil, options: [String] = [], http: FaultHTTP,
        readyWithin: Duration = .seconds(60), binary: String? = nil, environment: [String: String] = [:],
        logLevel: String = "notice", development: Bool = true
    ) async throws -> ServerProcess {
        let port = try port ?? TestCluster.freePort()
        let adminTokenFile = folder + "/admin-token"
        try FaultFixtures.adminToken.write(toFile: adminTokenFile, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: adminTokenFile)
        let rootFile = folder + "/test-root.der"
        try Data(TestPKI.der(FaultFixtures.pki.root)).write(to: URL(fileURLWithPath: rootFile))
        let executable = try binary ?? Self.binary()
        let command =
            [
                executable, "serve", "--database-url", databaseURL, "--host", "127.0.0.1", "--port", String(port),
                "--root-cert", rootFile, "--admin-token-file", adminTokenFile, "--pool-size", "8",
            ] + (development ? ["--dev-auth", "--stub-receipts"] : []) + options
        let child = try Spawned.start(
            command,
            environment: Spawned.environment(
                (development ? ["SHOPLEDGER_STUB_SECRET": FaultFixtures.stubSecret] : [:]).merging(
                    ["SHOPLEDGER_LOG_LEVEL": logLevel]
                ) { $1 }.merging(
                    environment
                ) { $1 }),
            logPath: folder + "/server.log")
        FaultResources.register(server: child.pid, folder: folder)
        let server = ServerProcess(child: child, port: port, folder: folder, baseURL: "http://127.0.0.1:\(port)")
        do {
            try await server.waitUntilReady(http: http, within: readyWithin)
        } catch {
            server.kill()
            throw error
        }
        return server
    }

    func waitUntilReady(http: FaultHTTP, within timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let exit = child.exit {
                throw FaultTestError("shopledger serve ended (\(exit)) before it was ready:\n\(child.logTail())")
            }
            if let answer = try? await http.send(.GET, baseURL + "/readyz", timeout: .seconds(2)), answer.status == 200
            {
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw FaultTestError("shopledger serve was not ready within \(timeout):\n\(child.logTail())")
    }

    /// SIGKILL and reap (clean-up, or the SIGKILL scenario itself).
    func kill() {
        child.killAndReap()
        FaultResources.release(server: child.pid)
    }

    /// `shopledger reconcile` against `databaseURL`: exit status and output.
    static func reconcile(databaseURL: String) async throws -> (passed: Bool, output: String) {
        let (status, output) = try await Spawned.run([try binary(), "reconcile", "--database-url", databaseURL])
        return (status == .exited(0), output)
    }
}
