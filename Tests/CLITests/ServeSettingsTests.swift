import ArgumentParser
import Foundation
import Testing

@testable import shopledger

/// `serve`'s flags refused with messages that name them: negative numbers, the grace against the service
/// manager's stop timeout, a short token, a database URL libpq cannot parse. In process: the parser and
/// `ServerOptions.configuration()` are what the binary runs (the environment cases spawn it, in
/// FaultTests/EnvironmentSettingsTests).
@Suite("serve's settings refused naming the flag")
struct ServeSettingsTests {
    /// The message `arguments` to `serve` stop with, parsing or building the configuration; nil when none.
    static func refusal(_ arguments: [String]) -> String? {
        do {
            let command = try ServeCommand.parse(arguments)
            _ = try command.server.configuration()
            return nil
        } catch {
            #expect(ShopLedgerCommand.exitCode(for: error).rawValue == 64, "a usage error: \(error)")
            return ShopLedgerCommand.message(for: error)
        }
    }

    @Test(
        "a negative number is taken as the flag's value and refused as out of range, not 'Missing value'",
        arguments: [
            (["--port", "-5"], "--port must be an integer between 0 and 65535, got -5"),
            (
                ["--request-timeout", "-1"],
                "--request-timeout must be a number of seconds between 0.001 and 600, got -1.0"
            ),
            (["--shutdown-grace", "-2"], "--shutdown-grace must be a number of seconds between 0 and 600, got -2.0"),
            (["--db-port", "-5432"], "--db-port must be an integer between 1 and 65535, got -5432"),
        ])
    func negativeNumbers(arguments: [String], message: String) {
        #expect(Self.refusal(arguments) == message)
    }

    @Test("a value that is another flag is refused as that value, not as a missing one")
    func flagAsValue() {
        #expect(Self.refusal(["--port", "--host", "x"]) == "The value '--host' is invalid for '--port <port>'")
    }

    @Test("a shutdown grace that does not fit in the service manager's stop timeout is refused")
    func graceAgainstStopTimeout() {
        #expect(
            Self.refusal(["--shutdown-grace", "45", "--stop-timeout", "30"])
                == "--shutdown-grace is 45 s, but --stop-timeout says the service manager kills the server 30 s after "
                + "SIGTERM: make the grace shorter, or raise the unit's TimeoutStopSec and SHOPLEDGER_STOP_TIMEOUT together"
        )
        #expect(
            Self.refusal(["--shutdown-grace", "30", "--stop-timeout", "30"])?.hasPrefix("--shutdown-grace is 30 s")
                == true)
        // The default grace (10 s) fits the shipped unit's 30 s; without a stop timeout nothing is checked.
        #expect(Self.refusal(["--stop-timeout", "30"]) == nil)
        #expect(Self.refusal(["--shutdown-grace", "29.5", "--stop-timeout", "30"]) == nil)
        #expect(Self.refusal(["--shutdown-grace", "45"]) == nil)
    }

    @Test("a short metrics or admin token from a file is refused naming the flag")
    func shortTokens() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("token-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect(
            FileManager.default.createFile(
                atPath: file, contents: Data("short\n".utf8), attributes: [.posixPermissions: 0o600]))
        #expect(
            Self.refusal(["--metrics-token-file", file])
                == "--metrics-token-file: the metrics token must be at least 16 bytes, got 5")
        #expect(
            Self.refusal(["--admin-token-file", file])
                == "--admin-token-file: the admin token must be at least 16 bytes, got 5")
        try Data("0123456789 abcdef".utf8).write(to: URL(fileURLWithPath: file))
        #expect(
            Self.refusal(["--metrics-token-file", file])
                == "--metrics-token-file: the metrics token must not contain spaces or control characters")
    }

    @Test("a database URL libpq cannot parse is refused at parse time, naming the flag")
    func badDatabaseURL() {
        #expect(
            Self.refusal(["--database-url", "host=localhost port"])
                == #"--database-url: missing "=" after "port" in connection info string"#)
        #expect(
            Self.refusal(["--database-url", "postgresql://localhost/db?nosuch=1"])
                == #"--database-url: invalid URI query parameter: "nosuch""#)
        #expect(Self.refusal(["--database-url", "postgresql://localhost/db"]) == nil)
    }

    /// The shipped unit says how long systemd waits after SIGTERM twice: TimeoutStopSec for systemd, and
    /// SHOPLEDGER_STOP_TIMEOUT for serve's check; they must agree.
    @Test("the shipped systemd unit gives serve its TimeoutStopSec as SHOPLEDGER_STOP_TIMEOUT")
    func unitStopTimeout() throws {
        let unit = try String(
            contentsOf: EnvironmentCheckTests.repository.appendingPathComponent("deploy/systemd/shopledger.service"),
            encoding: .utf8)
        let lines = unit.split(separator: "\n").map(String.init)
        let timeout = try #require(lines.first { $0.hasPrefix("TimeoutStopSec=") })
        let variable = try #require(lines.first { $0.hasPrefix("Environment=SHOPLEDGER_STOP_TIMEOUT=") })
        #expect(timeout == "TimeoutStopSec=30s")
        #expect(variable == "Environment=SHOPLEDGER_STOP_TIMEOUT=30")
    }
}
