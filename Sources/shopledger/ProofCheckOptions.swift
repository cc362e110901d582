import ArgumentParser
import Receipts

/// What `verify-transaction` and `verify-receipt` check a payload for besides its signature: the app's
/// bundle id and the accepted environments, named as `serve` names them (``VerifierOptions``), with a
/// fixed default instead of the server's environment variables: a support tool checks what it is told.
struct ProofCheckOptions: ParsableArguments {
    @Option(name: .customLong("bundle-id"), help: "The app's bundle id.")
    var bundleId = "com.memolease.sesac1"

    @Option(
        name: .customLong("environments"),
        help: "Accepted environments, comma-separated, as serve takes them. Default: Production,Sandbox")
    var environments: String?

    /// A verifier configuration for these checks (the built-in roots; the commands replace them when asked).
    func configuration() throws -> VerifierConfiguration {
        var configuration = VerifierConfiguration(bundleId: bundleId)
        if let environments { configuration.acceptedEnvironments = try VerifierOptions.environments(environments) }
        return configuration
    }

    /// The root certificates in `files` (PEM or DER); a file that is not one is a usage error.
    static func roots(_ files: [String]) throws -> [RootCertificate] {
        var roots: [RootCertificate] = []
        for path in files {
            do {
                roots += try RootCertificate.load(contentsOfFile: path)
            } catch {
                throw ValidationError(error.message)
            }
        }
        return roots
    }
}
