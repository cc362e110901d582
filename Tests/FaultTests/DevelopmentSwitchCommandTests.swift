import Foundation
import Testing

@Suite("shopledger serve refuses development switches on a public address")
struct DevelopmentSwitchCommandTests {
    /// `shopledger serve` with `arguments`, against a database that does not exist (the checks run first).
    static func serve(
        _ arguments: [String], secret: String = FaultFixtures.stubSecret
    ) async throws -> (Spawned.Termination, String) {
        let command =
            [
                try ServerProcess.binary(), "serve", "--database-url",
                "host=/nonexistent-shopledger-socket dbname=none connect_timeout=1",
            ] + arguments
        return try await Spawned.run(
            command, environment: Spawned.environment(["SHOPLEDGER_STUB_SECRET": secret]), timeout: .seconds(60))
    }

    @Test(
        "--dev-auth or --stub-receipts with --host 0.0.0.0 exit at once naming --allow-development-on-public-address; with it, the check passes; a short stub secret is refused",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(2)))
    func publicAddress() async throws {
        for switches in [["--dev-auth"], ["--stub-receipts"]] {
            let (status, output) = try await Self.serve(["--host", "0.0.0.0"] + switches)
            #expect(
                status != .exited(0) && output.contains("--allow-development-on-public-address"),
                "\(switches): \(status) \(output)")
        }
        let (_, allowed) = try await Self.serve([
            "--host", "0.0.0.0", "--dev-auth", "--allow-development-on-public-address",
        ])
        #expect(
            !allowed.contains("--allow-development-on-public-address"),
            "allowed: the run goes on to the database: \(allowed)")
        let (status, short) = try await Self.serve(["--stub-receipts"], secret: "short-secret")
        #expect(status != .exited(0) && short.contains("at least 32"), "\(short)")
    }
}
