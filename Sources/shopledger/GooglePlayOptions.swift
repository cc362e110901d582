import ArgumentParser
import Foundation
import GooglePlay
import Logging
import ShopServer

/// `serve`'s Google Play settings (docs/google-play.md): the API's, then the budget, the sync and the pushes;
/// each a flag, or a `SHOPLEDGER_GOOGLE_PLAY_*` environment variable when the flag is absent.
struct GooglePlayOptions: ParsableArguments {
    @OptionGroup var api: GooglePlayAPIOptions

    @Option(
        name: .customLong("google-play-verify-budget"), parsing: .unconditional,
        help:
            "Seconds a purchase may wait for Google Play's answer (cut to the request's time left); then it answers 503 google_play_unavailable. Default: $SHOPLEDGER_GOOGLE_PLAY_VERIFY_BUDGET or 6"
    )
    var verifyBudget: Double?

    @Option(
        name: .customLong("google-play-price-budget"), parsing: .unconditional,
        help:
            "Seconds a new Google Play purchase may wait for its order's price (cut to the request's time left); then it stays unpriced and a sync prices it. Default: $SHOPLEDGER_GOOGLE_PLAY_PRICE_BUDGET or 2"
    )
    var priceBudget: Double?

    @Option(
        name: .customLong("google-play-sync-interval"), parsing: .unconditional,
        help:
            "Seconds between Google Play syncs while serving (owed acknowledgements, completed pending purchases, prices, voided purchases); off unless set. Default: $SHOPLEDGER_GOOGLE_PLAY_SYNC_INTERVAL"
    )
    var syncInterval: Double?

    @Option(
        name: .customLong("google-play-push-audience"),
        help:
            "The audience of the Pub/Sub push subscription's tokens (its endpoint URL); pushes are refused (501) unless set. Default: $SHOPLEDGER_GOOGLE_PLAY_PUSH_AUDIENCE"
    )
    var pushAudience: String?

    @Option(
        name: .customLong("google-play-push-account"),
        help:
            "The service account email the push subscription authenticates as. Default: $SHOPLEDGER_GOOGLE_PLAY_PUSH_ACCOUNT"
    )
    var pushAccount: String?

    @Option(
        name: .customLong("google-play-push-certs-url"),
        help:
            "Where Google's OAuth certificates are fetched (and refreshed) to verify push tokens. Default: $SHOPLEDGER_GOOGLE_PLAY_PUSH_CERTS_URL or https://www.googleapis.com/oauth2/v1/certs"
    )
    var pushCertificatesURL: String?

    @Option(
        name: .customLong("google-play-push-certs"),
        help:
            "A file of Google's OAuth certificates ({kid: PEM}) instead of the URL, kept fresh by a job of yours. Default: $SHOPLEDGER_GOOGLE_PLAY_PUSH_CERTS"
    )
    var pushCertificatesFile: String?

    /// Google Play's settings, the push certificates fetched now when pushes are configured with a URL;
    /// nil when Google Play is not configured.
    func settings(logger: Logger) async throws -> GooglePlaySettings? {
        guard let api = try api.apiConfiguration() else { return nil }
        var settings = GooglePlaySettings(
            api: api,
            verificationBudget: try Setting.duration(
                verifyBudget, "--google-play-verify-budget", "SHOPLEDGER_GOOGLE_PLAY_VERIFY_BUDGET", in: 0.1...600,
                default: 6),
            priceBudget: try Setting.duration(
                priceBudget, "--google-play-price-budget", "SHOPLEDGER_GOOGLE_PLAY_PRICE_BUDGET", in: 0.1...600,
                default: 2),
            syncInterval: try Setting.seconds(
                syncInterval, "--google-play-sync-interval", "SHOPLEDGER_GOOGLE_PLAY_SYNC_INTERVAL", in: 1...604_800
            ).map { Duration.milliseconds(Int64(($0 * 1000).rounded())) })
        let audience = pushAudience ?? Environment.string("SHOPLEDGER_GOOGLE_PLAY_PUSH_AUDIENCE")
        let account = pushAccount ?? Environment.string("SHOPLEDGER_GOOGLE_PLAY_PUSH_ACCOUNT")
        if audience == nil, account == nil { return settings }
        guard let audience, let account else {
            throw ValidationError(
                "Google Play pushes need both --google-play-push-audience and --google-play-push-account")
        }
        let store: GoogleCertificateStore
        if let file = pushCertificatesFile ?? Environment.string("SHOPLEDGER_GOOGLE_PLAY_PUSH_CERTS") {
            do {
                store = try GoogleCertificateStore(contentsOfFile: file)
            } catch {
                throw ValidationError("--google-play-push-certs: \(error.description)")
            }
        } else {
            let url =
                pushCertificatesURL ?? Environment.string("SHOPLEDGER_GOOGLE_PLAY_PUSH_CERTS_URL")
                ?? GooglePlaySettings.googleCertificatesURL
            do {
                try GoogleCertificateFetcher.validate(url: url)
            } catch {
                throw ValidationError("--google-play-push-certs-url: \(error.description)")
            }
            do {
                store = GoogleCertificateStore(
                    fetched: try await GoogleCertificateFetcher(url: url).fetchAtStart(logger: logger), from: url)
            } catch {
                throw ServiceUnavailable(description: "--google-play-push-certs-url: \(error.description)")
            }
        }
        settings.push = .init(audience: audience, serviceAccountEmail: account, certificates: store)
        return settings
    }
}

/// What reaching the Google Play Developer API takes (`serve` and `shopledger google sync`): the package and
/// the service account. Without both Google Play is not configured.
struct GooglePlayAPIOptions: ParsableArguments {
    @Option(
        name: .customLong("google-play-package"),
        help: "The Android app's package name on Google Play. Default: $SHOPLEDGER_GOOGLE_PLAY_PACKAGE")
    var package: String?

    @Option(
        name: .customLong("google-service-account-file"),
        help:
            "The service account's JSON key file with access to the Google Play Developer API. Default: $SHOPLEDGER_GOOGLE_SERVICE_ACCOUNT_FILE"
    )
    var serviceAccountFile: String?

    @Option(
        name: .customLong("google-play-api-url"),
        help: ArgumentHelp(
            "Root of the Google Play Developer API (tests). Default: $SHOPLEDGER_GOOGLE_PLAY_API_URL or https://androidpublisher.googleapis.com",
            visibility: .hidden))
    var apiURL: String?

    @Option(
        name: .customLong("google-play-token-url"),
        help: ArgumentHelp(
            "OAuth token endpoint (tests). Default: $SHOPLEDGER_GOOGLE_PLAY_TOKEN_URL or the key file's token_uri",
            visibility: .hidden))
    var tokenURL: String?

    /// The API client's configuration, or nil when Google Play is not configured at all.
    func apiConfiguration() throws -> GooglePlayConfiguration? {
        let package = package ?? Environment.string("SHOPLEDGER_GOOGLE_PLAY_PACKAGE")
        let file = serviceAccountFile ?? Environment.string("SHOPLEDGER_GOOGLE_SERVICE_ACCOUNT_FILE")
        if package == nil, file == nil { return nil }
        guard let package, let file else {
            throw ValidationError("Google Play needs both --google-play-package and --google-service-account-file")
        }
        try SecretFile.checkPrivate(file, what: "the Google service account key")
        let credential: ServiceAccountCredential
        do {
            credential = try ServiceAccountCredential(contentsOfFile: file)
        } catch {
            throw ValidationError("--google-service-account-file: \(error.message)")
        }
        let configuration = GooglePlayConfiguration(
            packageName: package, credential: credential,
            apiBaseURL: apiURL ?? Environment.string("SHOPLEDGER_GOOGLE_PLAY_API_URL")
                ?? GooglePlayConfiguration.googleAPIBaseURL,
            tokenURL: tokenURL ?? Environment.string("SHOPLEDGER_GOOGLE_PLAY_TOKEN_URL"))
        do {
            try configuration.validate()
        } catch {
            throw ValidationError("Google Play: \(error.message)")
        }
        return configuration
    }
}
