import ArgumentParser
import Foundation
import Receipts
import Shop
import ShopServer

/// `serve`'s settings: each a flag, or a `SHOPLEDGER_*` environment variable when the flag is absent.
struct ServerOptions: ParsableArguments {
    @Option(help: "Address to listen on. Default: $SHOPLEDGER_HOST or 127.0.0.1")
    var host: String?

    @Option(
        parsing: .unconditional,
        help: "Port to listen on. Default: $SHOPLEDGER_PORT or 8080")
    var port: Int?

    @Option(
        name: .customLong("body-limit"), parsing: .unconditional,
        help: "Largest request body in bytes (413 above). Default: $SHOPLEDGER_BODY_LIMIT or 65536")
    var bodyLimit: Int?

    @Option(
        name: .customLong("request-timeout"), parsing: .unconditional,
        help: "Seconds a request may take before it is cancelled (503). Default: $SHOPLEDGER_REQUEST_TIMEOUT or 10")
    var requestTimeout: Double?

    @Option(
        name: .customLong("shutdown-grace"), parsing: .unconditional,
        help: "Seconds graceful shutdown waits for in-flight requests. Default: $SHOPLEDGER_SHUTDOWN_GRACE or 10")
    var shutdownGrace: Double?

    @Option(
        name: .customLong("stop-timeout"), parsing: .unconditional,
        help:
            "Seconds the service manager waits after SIGTERM before it kills the process (systemd's TimeoutStopSec; the shipped unit sets both to 30): a --shutdown-grace that is not shorter is refused. Default: $SHOPLEDGER_STOP_TIMEOUT, else not checked"
    )
    var stopTimeout: Double?

    /// What proves a purchase (shared with the `appstore` commands, which verify what Apple sends).
    @OptionGroup var verifier: VerifierOptions

    @Flag(
        name: .customLong("stub-receipts"),
        help:
            "Accept stub receipts and stub notifications (development and tests only). Default: $SHOPLEDGER_STUB_RECEIPTS=1"
    )
    var stubReceipts = false

    @Option(
        name: .customLong("stub-secret-file"),
        help:
            "File with the HMAC secret stubs must be signed with. Default: $SHOPLEDGER_STUB_SECRET (the secret itself)")
    var stubSecretFile: String?

    @Option(
        name: .customLong("firebase-project"),
        help: "Firebase project id: ID tokens must be issued for it. Default: $SHOPLEDGER_FIREBASE_PROJECT")
    var firebaseProject: String?

    @Option(
        name: .customLong("google-certs"),
        help: "File of Google's securetoken X.509 certificates (JSON, kid → PEM). Default: $SHOPLEDGER_GOOGLE_CERTS")
    var googleCertificates: String?

    @Option(
        name: .customLong("google-certs-url"),
        help:
            "Fetch Google's securetoken certificates from this URL at start and again when the answer's Cache-Control max-age runs out, instead of --google-certs (Google's: \(GoogleCertificateFetcher.googleURL)). Default: $SHOPLEDGER_GOOGLE_CERTS_URL"
    )
    var googleCertificatesURL: String?

    @Option(
        name: .customLong("google-certs-check-interval"), parsing: .unconditional,
        help:
            "Seconds between checks of the --google-certs file for a new version (SIGHUP re-reads it at once); with --google-certs-url, the shortest time between two fetches. Default: $SHOPLEDGER_GOOGLE_CERTS_CHECK_INTERVAL or 60"
    )
    var googleCertificatesCheckInterval: Double?

    @Flag(
        name: .customLong("allow-development-on-public-address"),
        help:
            "Allow --dev-auth and --stub-receipts when listening on a non-loopback address (never in production). Default: $SHOPLEDGER_ALLOW_DEVELOPMENT_ON_PUBLIC_ADDRESS=1"
    )
    var allowDevelopmentOnPublicAddress = false

    @Flag(
        name: .customLong("dev-auth"),
        help: "Accept development tokens dev:<uid> (never in production). Default: $SHOPLEDGER_DEV_AUTH=1")
    var devAuth = false

    @OptionGroup(title: "App Store Server API") var appStore: AppStoreOptions

    @OptionGroup(title: "Google Play") var googlePlay: GooglePlayOptions

    @OptionGroup(title: "Webhook delivery") var webhooks: WebhookOptions

    @Option(
        name: .customLong("app-store-sync-interval"), parsing: .unconditional,
        help:
            "Seconds between syncs with the App Store Server API (notification and refund history) while serving; off unless set. Default: $SHOPLEDGER_APP_STORE_SYNC_INTERVAL"
    )
    var appStoreSyncInterval: Double?

    @Option(
        name: .customLong("app-store-price-budget"), parsing: .unconditional,
        help:
            "Seconds a purchase may wait for Apple to price a classic receipt's entry (cut to the request's time left); then it is recorded unpriced and a sync prices it. Default: $SHOPLEDGER_APP_STORE_PRICE_BUDGET or 3"
    )
    var appStorePriceBudget: Double?

    @Option(
        name: .customLong("app-store-restore-budget"), parsing: .unconditional,
        help:
            "Seconds a restore may wait for Apple's transaction history (cut to the request's time left); then it answers 503 app_store_unavailable. Default: $SHOPLEDGER_APP_STORE_RESTORE_BUDGET or 6"
    )
    var appStoreRestoreBudget: Double?

    @Option(
        name: .customLong("notification-sweep-interval"), parsing: .unconditional,
        help:
            "Seconds between sweeps that apply stored App Store notifications left unapplied (at least 0.01). Default: $SHOPLEDGER_NOTIFICATION_SWEEP_INTERVAL or 30"
    )
    var notificationSweepInterval: Double?

    @Option(
        name: .customLong("first-purchase-catch-up-interval"), parsing: .unconditional,
        help:
            "Seconds between catch-ups that fold new purchases into first_purchases and delete the cached report days they change, which reports read (at least 0.01). Default: $SHOPLEDGER_FIRST_PURCHASE_CATCH_UP_INTERVAL or 30"
    )
    var firstPurchaseCatchUpInterval: Double?

    @Option(
        name: .customLong("admin-token-file"),
        help:
            "File with the admin bearer token (at least 16 bytes). Default: $SHOPLEDGER_ADMIN_TOKEN (the token itself)")
    var adminTokenFile: String?

    @Option(
        name: .customLong("admin-label"),
        help:
            "Who holds the admin token, recorded as the actor of support actions taken with it. Default: $SHOPLEDGER_ADMIN_LABEL, else admin"
    )
    var adminLabel: String?

    @Option(
        name: .customLong("metrics-token-file"),
        help:
            "File with a bearer token GET /metrics then requires (at least 16 bytes). Default: $SHOPLEDGER_METRICS_TOKEN (the token itself); none: /metrics is open"
    )
    var metricsTokenFile: String?

    @Option(
        name: .customLong("max-connections"), parsing: .unconditional,
        help:
            "Most open connections; past it a new one displaces the connection waiting longest for a request, and is refused only when all are busy. Default: $SHOPLEDGER_MAX_CONNECTIONS or 4096 (lowered to what the open-file limit allows)"
    )
    var maxConnections: Int?

    @Option(
        name: .customLong("idle-timeout"), parsing: .unconditional,
        help:
            "Seconds a connection may take to send a whole request head, from when it opens and after each response; then it is closed (0.1 to 3600). Default: $SHOPLEDGER_IDLE_TIMEOUT or 15"
    )
    var idleTimeout: Double?

    @Option(
        name: .customLong("verification-threads"), parsing: .unconditional,
        help:
            "Proofs verified at once, each on a thread of its own (1 to 256). Default: $SHOPLEDGER_VERIFICATION_THREADS or the number of cores"
    )
    var verificationThreads: Int?

    @Option(
        name: .customLong("restore-limit"),
        help: "Restores per user, COUNT/SECONDS (a token bucket), or off. Default: $SHOPLEDGER_RESTORE_LIMIT or 10/3600"
    )
    var restoreLimit: String?

    @Option(
        name: .customLong("refused-proof-limit"),
        help:
            "Refused proofs per user, COUNT/SECONDS, or off; past it that user's proofs are not verified until the bucket refills. Default: $SHOPLEDGER_REFUSED_PROOF_LIMIT or 30/600"
    )
    var refusedProofLimit: String?

    @Option(
        name: .customLong("purchase-limit"),
        help:
            "Purchase requests per user, accepted or not, COUNT/SECONDS, or off. Default: $SHOPLEDGER_PURCHASE_LIMIT or off"
    )
    var purchaseLimit: String?

    @Option(
        name: .customLong("price-lookup-limit"),
        help:
            "Calls to Apple's API made inside one user's purchase requests (pricing classic receipts' new entries), COUNT/SECONDS, or off; past it entries are recorded unpriced and a sync prices them. Default: $SHOPLEDGER_PRICE_LOOKUP_LIMIT or 20/600"
    )
    var priceLookupLimit: String?

    @Option(
        name: .customLong("refused-notification-limit"),
        help:
            "Refused App Store notifications per client address, COUNT/SECONDS, or off; past it that address's notifications are answered 429 before they are read. Default: $SHOPLEDGER_REFUSED_NOTIFICATION_LIMIT or 30/60"
    )
    var refusedNotificationLimit: String?

    @Option(
        name: .customLong("trusted-proxy"),
        help:
            "Address or CIDR of a proxy in front (repeatable; commas allowed): from it, X-Forwarded-For names the client (the right-most address that is not a trusted proxy). Default: $SHOPLEDGER_TRUSTED_PROXY (comma-separated), else none"
    )
    var trustedProxy: [String] = []

    /// The configuration these settings describe, checked; a `ValidationError` names what cannot work
    /// (the flag, or the variable when the value came from the environment).
    func configuration() throws -> ServerConfiguration {
        var receipts = try verifier.configuration()
        receipts.acceptsStubReceipts = try Setting.toggle(stubReceipts, "SHOPLEDGER_STUB_RECEIPTS")
        receipts.stubSecret = try StubSecret.read(file: stubSecretFile)
        if let secret = receipts.stubSecret, secret.utf8.count < ServerConfiguration.minimumStubSecretBytes {
            throw ValidationError(
                "\(stubSecretFile == nil ? "SHOPLEDGER_STUB_SECRET" : "--stub-secret-file"): the stub secret is "
                    + "\(secret.utf8.count) bytes; it must be at least \(ServerConfiguration.minimumStubSecretBytes)")
        }

        let auth = AuthConfiguration(
            firebaseProjectId: firebaseProject ?? Environment.string("SHOPLEDGER_FIREBASE_PROJECT"),
            googleCertificatesPath: try googleCertificates ?? Self.existingFile("SHOPLEDGER_GOOGLE_CERTS"),
            googleCertificatesURL: try checkedGoogleCertificatesURL(),
            acceptsDevelopmentTokens: try Setting.toggle(devAuth, "SHOPLEDGER_DEV_AUTH"),
            adminToken: try adminToken(),
            adminLabel: adminLabel ?? Environment.string("SHOPLEDGER_ADMIN_LABEL") ?? "admin")

        let syncInterval = try Setting.seconds(
            appStoreSyncInterval, "--app-store-sync-interval", "SHOPLEDGER_APP_STORE_SYNC_INTERVAL",
            in: 1...604_800
        ).map { Duration.milliseconds(Int64(($0 * 1000).rounded())) }

        let configuration = ServerConfiguration(
            host: host ?? Environment.string("SHOPLEDGER_HOST") ?? "127.0.0.1",
            port: try Setting.integer(port, "--port", "SHOPLEDGER_PORT", in: 0...65535) ?? 8080,
            bodyLimit: try Setting.integer(bodyLimit, "--body-limit", "SHOPLEDGER_BODY_LIMIT", in: 1024...(64 << 20))
                ?? ServerConfiguration.defaultBodyLimit,
            requestTimeout: try Setting.duration(
                requestTimeout, "--request-timeout", "SHOPLEDGER_REQUEST_TIMEOUT", in: 0.001...600, default: 10),
            shutdownGracePeriod: try checkedShutdownGrace(),
            auth: auth,
            receipts: receipts,
            notificationSweepInterval: try Setting.duration(
                notificationSweepInterval, "--notification-sweep-interval", "SHOPLEDGER_NOTIFICATION_SWEEP_INTERVAL",
                in: 0.01...600, default: 30),
            firstPurchaseCatchUpInterval: try Setting.duration(
                firstPurchaseCatchUpInterval, "--first-purchase-catch-up-interval",
                "SHOPLEDGER_FIRST_PURCHASE_CATCH_UP_INTERVAL", in: 0.01...600, default: 30),
            appStoreAPI: try appStore.configuration(bundleId: receipts.bundleId),
            appStoreSyncInterval: syncInterval,
            appStorePriceBudget: try Setting.duration(
                appStorePriceBudget, "--app-store-price-budget", "SHOPLEDGER_APP_STORE_PRICE_BUDGET", in: 0.1...600,
                default: 3),
            appStoreRestoreBudget: try Setting.duration(
                appStoreRestoreBudget, "--app-store-restore-budget", "SHOPLEDGER_APP_STORE_RESTORE_BUDGET",
                in: 0.1...600, default: 6),
            allowsDevelopmentOnPublicAddress: try Setting.toggle(
                allowDevelopmentOnPublicAddress, "SHOPLEDGER_ALLOW_DEVELOPMENT_ON_PUBLIC_ADDRESS"),
            googleCertificatesCheckInterval: try Setting.duration(
                googleCertificatesCheckInterval, "--google-certs-check-interval",
                "SHOPLEDGER_GOOGLE_CERTS_CHECK_INTERVAL", in: 0.01...600, default: 60),
            metricsToken: try token(
                file: metricsTokenFile, flag: "--metrics-token-file", variable: "SHOPLEDGER_METRICS_TOKEN",
                what: "the metrics token"),
            verificationThreads: try Setting.integer(
                verificationThreads, "--verification-threads", "SHOPLEDGER_VERIFICATION_THREADS", in: 1...256)
                ?? ProcessInfo.processInfo.activeProcessorCount,
            maxConnections: try OpenFileLimit.connectionLimit(
                requested: Setting.integer(
                    maxConnections, "--max-connections", "SHOPLEDGER_MAX_CONNECTIONS", in: 1...1_000_000),
                default: ServerConfiguration.defaultMaxConnections),
            idleTimeout: try Setting.duration(
                idleTimeout, "--idle-timeout", "SHOPLEDGER_IDLE_TIMEOUT", in: 0.1...3600, default: 15),
            restoreLimit: try Self.rateLimit(
                restoreLimit, "SHOPLEDGER_RESTORE_LIMIT", default: ServerConfiguration.defaultRestoreLimit,
                name: "--restore-limit"),
            refusedProofLimit: try Self.rateLimit(
                refusedProofLimit, "SHOPLEDGER_REFUSED_PROOF_LIMIT",
                default: ServerConfiguration.defaultRefusedProofLimit, name: "--refused-proof-limit"),
            purchaseLimit: try Self.rateLimit(
                purchaseLimit, "SHOPLEDGER_PURCHASE_LIMIT", default: .off, name: "--purchase-limit"),
            priceLookupLimit: try Self.rateLimit(
                priceLookupLimit, "SHOPLEDGER_PRICE_LOOKUP_LIMIT",
                default: ServerConfiguration.defaultPriceLookupLimit, name: "--price-lookup-limit"),
            refusedNotificationLimit: try Self.rateLimit(
                refusedNotificationLimit, "SHOPLEDGER_REFUSED_NOTIFICATION_LIMIT",
                default: ServerConfiguration.defaultRefusedNotificationLimit, name: "--refused-notification-limit"),
            trustedProxies: try trustedProxies(),
            webhooks: try webhooks.settings(),
            webhookDestinations: try webhooks.destinations.destinations())
        do {
            try configuration.validate()
        } catch {
            throw ValidationError(error.description)
        }
        return configuration
    }

    /// `--shutdown-grace` (or its variable, or 10 s), refused when it does not fit in the service manager's
    /// stop timeout (`--stop-timeout`): the manager would kill the server in the middle of its shutdown.
    private func checkedShutdownGrace() throws -> Duration {
        let grace =
            try Setting.seconds(shutdownGrace, "--shutdown-grace", "SHOPLEDGER_SHUTDOWN_GRACE", in: 0...600) ?? 10
        if let stop = try Setting.seconds(stopTimeout, "--stop-timeout", "SHOPLEDGER_STOP_TIMEOUT", in: 1...86_400),
            grace >= stop
        {
            let graceName = shutdownGrace != nil ? "--shutdown-grace" : "SHOPLEDGER_SHUTDOWN_GRACE"
            let stopName = stopTimeout != nil ? "--stop-timeout" : "SHOPLEDGER_STOP_TIMEOUT"
            throw ValidationError(
                "\(graceName) is \(SettingValue.number(grace)) s, but \(stopName) says the service manager kills "
                    + "the server \(SettingValue.number(stop)) s after SIGTERM: make the grace shorter, or raise the "
                    + "unit's TimeoutStopSec and SHOPLEDGER_STOP_TIMEOUT together")
        }
        return .milliseconds(Int64((grace * 1000).rounded()))
    }

    /// The path `variable` names, refused naming the variable when no readable file is there (a flag's
    /// file is checked, and named, where it is read).
    private static func existingFile(_ variable: String) throws -> String? {
        guard let path = Environment.string(variable) else { return nil }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw ValidationError("\(variable) names \(path.prefix(200).debugDescription), which is no readable file")
        }
        return path
    }

    /// A bearer token from `file` (trimmed; private to its owner), or the `variable` itself when no file is
    /// given; one too short or with spaces is refused naming the flag or the variable it came from.
    private func token(file: String?, flag: String, variable: String, what: String) throws -> String? {
        let token = try file.map { try SecretFile.read($0, what: what) } ?? Environment.string(variable)
        guard let token else { return nil }
        let source = file == nil ? variable : flag
        guard token.utf8.count >= AdminToken.minimumLength else {
            throw ValidationError(
                "\(source): \(what) must be at least \(AdminToken.minimumLength) bytes, got \(token.utf8.count)")
        }
        guard token.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
            throw ValidationError("\(source): \(what) must not contain spaces or control characters")
        }
        return token
    }

    private static func rateLimit(
        _ flag: String?, _ variable: String, default fallback: RateLimit, name: String
    )
        throws -> RateLimit
    {
        guard let text = flag ?? Environment.string(variable) else { return fallback }
        guard let limit = RateLimit(parsing: text) else {
            throw ValidationError(
                "\(flag == nil ? variable : name) must be COUNT/SECONDS (e.g. 10/3600: ten, then one every 6 minutes) or off, "
                    + "got \(text.prefix(40).debugDescription)")
        }
        return limit
    }

    /// The `--trusted-proxy` flags, else `SHOPLEDGER_TRUSTED_PROXY`; none when neither is given.
    private func trustedProxies() throws -> TrustedProxies {
        let fromFlags = !trustedProxy.isEmpty
        guard let items = fromFlags ? trustedProxy : Environment.string("SHOPLEDGER_TRUSTED_PROXY").map({ [$0] })
        else { return .none }
        do {
            return try TrustedProxies(parsing: items)
        } catch {
            let name = fromFlags ? "--trusted-proxy" : "SHOPLEDGER_TRUSTED_PROXY"
            throw ValidationError("\(name): \(error.description)")
        }
    }

    /// Where the Google certificate URL came from, for messages.
    var googleCertificatesURLSource: String {
        googleCertificatesURL != nil ? "--google-certs-url" : "SHOPLEDGER_GOOGLE_CERTS_URL"
    }

    /// `--google-certs-url`, else `SHOPLEDGER_GOOGLE_CERTS_URL`, checked before anything is fetched.
    private func checkedGoogleCertificatesURL() throws -> String? {
        let fromFlag = googleCertificatesURL != nil
        guard let url = googleCertificatesURL ?? Environment.string("SHOPLEDGER_GOOGLE_CERTS_URL") else { return nil }
        do {
            try GoogleCertificateFetcher.validate(url: url)
        } catch {
            throw ValidationError(
                "\(fromFlag ? "--google-certs-url" : "SHOPLEDGER_GOOGLE_CERTS_URL"): \(error.description)")
        }
        return url
    }

    /// The admin token, from `--admin-token-file` or `SHOPLEDGER_ADMIN_TOKEN`.
    private func adminToken() throws -> String? {
        try token(
            file: adminTokenFile, flag: "--admin-token-file", variable: "SHOPLEDGER_ADMIN_TOKEN",
            what: "the admin token")
    }
}
