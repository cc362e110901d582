import ArgumentParser
import Foundation

/// `shopledger smoke --url URL`: a running server checked from outside, as the app and Apple reach it,
/// with no development switch on either side: the production smoke test after a deploy or a restore.
struct SmokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "smoke",
        abstract: "Check a running server from outside: ready, catalog, forged proofs refused, a purchase round trip.",
        discussion: """
            Every check is a request a client could make; nothing here needs the database or a development
            switch, so it runs against a production server. Without --token-file it checks readiness, the
            catalog and that a forged App Store notification is refused. With a user's ID token it also
            registers that user (if new) and checks that a forged signed transaction is refused and
            changes nothing the user owns. With --signed-transaction-file too (a sandbox purchase made by
            that user), it records the purchase, checks the user owns the item, and posts it again to
            check it is not counted twice. Sandbox purchases are kept apart from revenue.
            Exit status 0 when no check failed, 1 otherwise.
            """)

    @Option(help: "The server's base URL, e.g. https://shop.example.com (what the app talks to).")
    var url: String

    @Option(
        help: ArgumentHelp(
            "A file holding a user's Firebase ID token, for the checks that need a user.",
            valueName: "file"))
    var tokenFile: String?

    @Option(
        help: ArgumentHelp(
            "A file holding a StoreKit 2 signed transaction (JWS) the token's user bought in the sandbox.",
            valueName: "file"))
    var signedTransactionFile: String?

    @Option(help: "The app's bundle id, written into the forged proofs.")
    var bundleId = "com.memolease.sesac1"

    @Option(help: "Seconds each request may take (0.1 to 120).")
    var timeout: Double = 10

    @Flag(help: "Print the checks as JSON.")
    var json = false

    func validate() throws {
        guard let base = URL(string: url), let scheme = base.scheme, ["http", "https"].contains(scheme),
            base.host?.isEmpty == false
        else { throw ValidationError("--url must be an http or https URL with a host, e.g. https://shop.example.com") }
        guard (0.1...120).contains(timeout) else { throw ValidationError("--timeout must be between 0.1 and 120") }
        if signedTransactionFile != nil && tokenFile == nil {
            throw ValidationError("--signed-transaction-file needs --token-file: the purchase is made as that user")
        }
    }

    func run() async throws {
        let token = try tokenFile.map { try Self.read($0, "--token-file") }
        let transaction = try signedTransactionFile.map { try Self.read($0, "--signed-transaction-file") }
        let base = url.hasSuffix("/") ? String(url.dropLast()) : url
        let checks = await SmokeRun(
            client: SmokeHTTP(baseURL: base, timeout: .milliseconds(Int64(timeout * 1000))), bundleId: bundleId,
            token: token, signedTransaction: transaction
        ).run()
        if json {
            try JSONOutput.print(SmokeReport(url: base, checks: checks))
        } else {
            for check in checks { print(check.line) }
        }
        if checks.contains(where: { $0.outcome == .failed }) { throw ExitCode(1) }
    }

    /// The file's text without surrounding whitespace; a clear error when it cannot be read or is empty.
    static func read(_ path: String, _ flag: String) throws -> String {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ValidationError("\(flag) \(path): cannot read it (\(error.localizedDescription))")
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw ValidationError("\(flag) \(path) is empty") }
        return trimmed
    }
}

/// `smoke --json`: `{"url", "passed", "checks": [{"name", "outcome", "detail", "duration_ms"}]}`.
struct SmokeReport: Encodable {
    let url: String
    let passed: Bool
    let checks: [SmokeCheck]

    init(url: String, checks: [SmokeCheck]) {
        self.url = url
        self.checks = checks
        passed = !checks.contains { $0.outcome == .failed }
    }
}
