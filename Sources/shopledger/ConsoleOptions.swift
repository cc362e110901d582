import ArgumentParser
import Console

/// `serve`'s console settings: off unless a port is given (docs/console.md).
struct ConsoleOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Serve the operators' console on this port too (off when unset). Default: $SHOPLEDGER_CONSOLE_PORT",
            valueName: "port"))
    var consolePort: Int?

    @Option(
        help: ArgumentHelp(
            "The console's address: keep it private (loopback, a VPN, or behind a TLS proxy). Default: $SHOPLEDGER_CONSOLE_HOST or 127.0.0.1",
            valueName: "address"))
    var consoleHost: String?

    /// The console's configuration, or nil when no port is set.
    func configuration() throws -> ConsoleConfiguration? {
        guard let port = try Setting.integer(consolePort, "--console-port", "SHOPLEDGER_CONSOLE_PORT", in: 1...65535)
        else { return nil }
        return ConsoleConfiguration(
            host: consoleHost ?? Environment.string("SHOPLEDGER_CONSOLE_HOST") ?? "127.0.0.1", port: port)
    }
}
