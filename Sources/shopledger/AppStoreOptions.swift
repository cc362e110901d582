import AppStoreServerAPI
import ArgumentParser
import Foundation

/// The App Store Server API's settings: each a flag, or a `SHOPLEDGER_APP_STORE_*` environment variable
/// when the flag is absent. With none of key file, key id and issuer id set the API is not configured.
struct AppStoreOptions: ParsableArguments {
    @Option(
        name: .customLong("app-store-key-file"),
        help: "The in-app purchase key (.p8) from App Store Connect. Default: $SHOPLEDGER_APP_STORE_KEY_FILE")
    var keyFile: String?

    @Option(
        name: .customLong("app-store-key-id"),
        help: "The in-app purchase key's id. Default: $SHOPLEDGER_APP_STORE_KEY_ID")
    var keyId: String?

    @Option(
        name: .customLong("app-store-issuer-id"),
        help: "The App Store Connect issuer id. Default: $SHOPLEDGER_APP_STORE_ISSUER_ID")
    var issuerId: String?

    @Option(
        name: .customLong("app-store-environment"),
        help:
            "production (production first, sandbox when not found) or sandbox. Default: $SHOPLEDGER_APP_STORE_ENVIRONMENT or production"
    )
    var environment: String?

    @Option(
        name: .customLong("app-store-production-url"),
        help: ArgumentHelp(
            "Base URL of Apple's production server (tests). Default: $SHOPLEDGER_APP_STORE_PRODUCTION_URL or https://api.storekit.apple.com",
            visibility: .hidden))
    var productionURL: String?

    @Option(
        name: .customLong("app-store-sandbox-url"),
        help: ArgumentHelp(
            "Base URL of Apple's sandbox server (tests). Default: $SHOPLEDGER_APP_STORE_SANDBOX_URL or https://api.storekit-sandbox.apple.com",
            visibility: .hidden))
    var sandboxURL: String?

    /// The client's configuration, or nil when the API is not configured at all.
    func configuration(bundleId: String) throws -> AppStoreServerAPIConfiguration? {
        let keyFile = keyFile ?? Environment.string("SHOPLEDGER_APP_STORE_KEY_FILE")
        let keyId = keyId ?? Environment.string("SHOPLEDGER_APP_STORE_KEY_ID")
        let issuerId = issuerId ?? Environment.string("SHOPLEDGER_APP_STORE_ISSUER_ID")
        if keyFile == nil, keyId == nil, issuerId == nil { return nil }
        guard let keyFile, let keyId, let issuerId else {
            throw ValidationError(
                "the App Store Server API needs all of --app-store-key-file, --app-store-key-id and --app-store-issuer-id"
            )
        }
        let choices = ["production", "sandbox"]
        let environmentName: String
        if let environment {
            guard let choice = try? SettingValue.choice(environment, among: choices) else {
                throw ValidationError("--app-store-environment must be production or sandbox")
            }
            environmentName = choice
        } else {
            environmentName =
                try Environment.choice("SHOPLEDGER_APP_STORE_ENVIRONMENT", among: choices) ?? "production"
        }
        guard let environment = AppStoreServerAPIConfiguration.Environment(rawValue: environmentName) else {
            throw ValidationError("--app-store-environment must be production or sandbox")
        }
        let key: SigningKey
        // A file named by the variable is named with it, as a bad flag is named.
        let what =
            self.keyFile == nil ? "the in-app purchase key (SHOPLEDGER_APP_STORE_KEY_FILE)" : "the in-app purchase key"
        try SecretFile.checkPrivate(keyFile, what: what)
        do {
            key = try SigningKey(contentsOfFile: keyFile)
        } catch {
            throw ValidationError(
                self.keyFile == nil ? "SHOPLEDGER_APP_STORE_KEY_FILE: \(error.message)" : error.message)
        }
        let configuration = AppStoreServerAPIConfiguration(
            signingKey: key, keyId: keyId, issuerId: issuerId, bundleId: bundleId, environment: environment,
            productionBaseURL: productionURL ?? Environment.string("SHOPLEDGER_APP_STORE_PRODUCTION_URL")
                ?? AppStoreServerAPIConfiguration.appleProductionBaseURL,
            sandboxBaseURL: sandboxURL ?? Environment.string("SHOPLEDGER_APP_STORE_SANDBOX_URL")
                ?? AppStoreServerAPIConfiguration.appleSandboxBaseURL)
        do {
            try configuration.validate()
        } catch {
            throw ValidationError(error.message)
        }
        return configuration
    }
}
