import AppStoreServerAPI
import ArgumentParser
import Foundation

/// The App Store Connect API's settings (`apple sales fetch`): each a flag, or a
/// `SHOPLEDGER_APP_STORE_CONNECT_*` environment variable when the flag is absent. A team API key with
/// the Sales (or Finance) role, not the in-app purchase key of the App Store Server API.
struct AppStoreConnectOptions: ParsableArguments {
    @Option(
        name: .customLong("connect-key-file"),
        help:
            "The App Store Connect API key (.p8), Sales or Finance role. Default: $SHOPLEDGER_APP_STORE_CONNECT_KEY_FILE"
    )
    var keyFile: String?

    @Option(
        name: .customLong("connect-key-id"),
        help: "The App Store Connect API key's id. Default: $SHOPLEDGER_APP_STORE_CONNECT_KEY_ID")
    var keyId: String?

    @Option(
        name: .customLong("connect-issuer-id"),
        help: "The App Store Connect issuer id. Default: $SHOPLEDGER_APP_STORE_CONNECT_ISSUER_ID")
    var issuerId: String?

    @Option(
        name: .customLong("vendor-number"),
        help: "Apple's vendor number (Payments and Financial Reports). Default: $SHOPLEDGER_APPLE_VENDOR_NUMBER")
    var vendorNumber: String?

    @Option(
        name: .customLong("app-store-connect-url"),
        help: ArgumentHelp(
            "Base URL of the App Store Connect API (tests). Default: $SHOPLEDGER_APP_STORE_CONNECT_URL or https://api.appstoreconnect.apple.com",
            visibility: .hidden))
    var baseURL: String?

    /// The client's configuration; a clear error naming what is missing or wrong.
    func configuration() throws -> AppStoreConnectConfiguration {
        let keyFile = keyFile ?? Environment.string("SHOPLEDGER_APP_STORE_CONNECT_KEY_FILE")
        let keyId = keyId ?? Environment.string("SHOPLEDGER_APP_STORE_CONNECT_KEY_ID")
        let issuerId = issuerId ?? Environment.string("SHOPLEDGER_APP_STORE_CONNECT_ISSUER_ID")
        let vendorNumber = vendorNumber ?? Environment.string("SHOPLEDGER_APPLE_VENDOR_NUMBER")
        guard let keyFile, let keyId, let issuerId, let vendorNumber else {
            throw ValidationError(
                "the App Store Connect API needs --connect-key-file, --connect-key-id, --connect-issuer-id and "
                    + "--vendor-number (or SHOPLEDGER_APP_STORE_CONNECT_KEY_FILE, _KEY_ID, _ISSUER_ID and "
                    + "SHOPLEDGER_APPLE_VENDOR_NUMBER)")
        }
        let what =
            self.keyFile == nil
            ? "the App Store Connect API key (SHOPLEDGER_APP_STORE_CONNECT_KEY_FILE)" : "the App Store Connect API key"
        try SecretFile.checkPrivate(keyFile, what: what)
        let key: SigningKey
        do {
            key = try SigningKey(contentsOfFile: keyFile)
        } catch {
            throw ValidationError("\(what) in \(keyFile) is not a P-256 PKCS#8 PEM key of at most 16 KiB")
        }
        let configuration = AppStoreConnectConfiguration(
            signingKey: key, keyId: keyId, issuerId: issuerId, vendorNumber: vendorNumber,
            baseURL: baseURL ?? Environment.string("SHOPLEDGER_APP_STORE_CONNECT_URL")
                ?? AppStoreConnectConfiguration.appleBaseURL)
        do {
            try configuration.validate()
        } catch {
            throw ValidationError("App Store Connect API: \(error.message)")
        }
        return configuration
    }
}
