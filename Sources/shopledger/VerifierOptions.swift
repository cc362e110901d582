import ArgumentParser
import Foundation
import Receipts

/// What proves a purchase and what Apple sends: the app's bundle id, the accepted environments and the
/// trust roots. `serve` takes them, and the `appstore` commands, which verify every signed payload of
/// Apple's answers with them. Each a flag, or a `SHOPLEDGER_*` variable when the flag is absent.
struct VerifierOptions: ParsableArguments {
    @Option(
        name: .customLong("bundle-id"),
        help:
            "The app's bundle id; receipts and notifications of other apps are refused. Default: $SHOPLEDGER_BUNDLE_ID or com.memolease.sesac1"
    )
    var bundleId: String?

    @Option(
        help:
            "Accepted App Store environments, comma-separated. Default: $SHOPLEDGER_ENVIRONMENTS or Production,Sandbox")
    var environments: String?

    @Option(
        name: .customLong("root-cert"),
        help:
            "A trusted root certificate (DER or PEM) for App Store signed data; repeat for several. Replaces the built-in Apple Root CA - G3. Default: $SHOPLEDGER_ROOT_CERTS (comma-separated paths)"
    )
    var rootCertificateFiles: [String] = []

    @Option(
        name: .customLong("receipt-root-cert"),
        help:
            "A trusted root certificate (DER or PEM) for classic app receipts; repeat for several. Replaces the built-in Apple Inc. Root Certificate (trust Xcode's StoreKit Testing certificate this way in development). Default: $SHOPLEDGER_RECEIPT_ROOT_CERTS (comma-separated paths)"
    )
    var receiptRootCertificateFiles: [String] = []

    /// The verifier's configuration these settings describe (stub receipts off; `serve` adds them).
    func configuration() throws -> VerifierConfiguration {
        var receipts = VerifierConfiguration(
            bundleId: bundleId ?? Environment.string("SHOPLEDGER_BUNDLE_ID") ?? VerifierConfiguration.defaultBundleId)
        if let environments {
            receipts.acceptedEnvironments = try Self.environments(environments, name: "--environments")
        } else if let list = Environment.string("SHOPLEDGER_ENVIRONMENTS") {
            receipts.acceptedEnvironments = try Self.environments(list, name: "SHOPLEDGER_ENVIRONMENTS")
        }
        if let roots = try Self.roots(rootCertificateFiles, variable: "SHOPLEDGER_ROOT_CERTS", what: "root certificate")
        {
            receipts.rootCertificates = roots
        }
        if let roots = try Self.roots(
            receiptRootCertificateFiles, variable: "SHOPLEDGER_RECEIPT_ROOT_CERTS", what: "receipt root certificate")
        {
            receipts.receiptRootCertificates = roots
        }
        return receipts
    }

    /// The environments `--environments` may name.
    static let knownEnvironments: [StoreEnvironment] = [.production, .sandbox, .xcode, .localTesting, .stub]

    /// `--environments`: a comma-separated list of App Store environments (`Production,Sandbox`), each
    /// one of ``knownEnvironments`` (any case); `name` (the flag or the variable) names a bad one.
    static func environments(_ list: String, name: String = "--environments") throws -> Set<StoreEnvironment> {
        let names = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !names.isEmpty else { throw ValidationError("\(name) lists no environment") }
        var environments: Set<StoreEnvironment> = []
        for text in names {
            do {
                let choice = try SettingValue.choice(text, among: knownEnvironments.map(\.rawValue))
                environments.insert(StoreEnvironment(rawValue: choice))
            } catch {
                throw ValidationError("\(name): each environment \(error)")
            }
        }
        return environments
    }

    static func roots(_ files: [String], variable: String, what: String) throws -> [RootCertificate]? {
        let paths = files.isEmpty ? (Environment.string(variable)?.split(separator: ",").map(String.init) ?? []) : files
        guard !paths.isEmpty else { return nil }
        // A file the variable names is named with it, as a bad flag is named.
        let source = files.isEmpty ? "\(variable): " : ""
        var roots: [RootCertificate] = []
        for path in paths {
            do {
                roots += try RootCertificate.load(contentsOfFile: path)
            } catch {
                throw ValidationError("\(source)\(what) \(path): \(error)")
            }
        }
        return roots
    }
}
