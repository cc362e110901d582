import AppStoreServerAPI
import Foundation
import GooglePlay
import Receipts
import Shop
import Webhooks

/// Everything the HTTP service needs to know at start, validated before it starts.
public struct ServerConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// Largest request body accepted, in bytes; larger ones get 413.
    public var bodyLimit: Int
    /// How long one request may take; slower ones are cancelled (their database work with them) and get
    /// 503 (500 on the SeSAC surface).
    public var requestTimeout: Duration
    /// How long graceful shutdown waits for in-flight requests before cancelling them.
    public var shutdownGracePeriod: Duration
    /// Who may sign in: Firebase ID tokens, development tokens, the admin token.
    public var auth: AuthConfiguration
    /// What proves a purchase: bundle id, accepted environments, trust roots, stub receipts.
    public var receipts: VerifierConfiguration
    /// How often stored notifications whose ledger step did not happen are applied again.
    public var notificationSweepInterval: Duration
    /// How often purchases are folded into `first_purchases`, which the reports' first-time buyers
    /// read (they add the purchases since, so this bounds how many a report adds).
    public var firstPurchaseCatchUpInterval: Duration
    /// How often the time of the last recorded backup is read for `/metrics` (BackupWatcher).
    public var backupCheckInterval: Duration = .seconds(60)
    /// Apple's App Store Server API (restore, sync); nil when not configured, and then those features
    /// answer 501 and nothing else changes.
    public var appStoreAPI: AppStoreServerAPIConfiguration?
    /// How often `serve` syncs with the App Store Server API (notification and refund history); nil: never.
    public var appStoreSyncInterval: Duration?
    /// Google Play purchases, refunds and pushes (docs/google-play.md); nil: the App Store only.
    public var googlePlay: GooglePlaySettings? = nil
    /// The longest a price lookup inside a purchase may take (a classic receipt's entry; cut to the
    /// request's time left less ``appStoreLedgerReserve``). When Apple has not answered by then, the
    /// purchase is recorded unpriced and a sync prices it later.
    public var appStorePriceBudget: Duration
    /// The longest a restore may wait for Apple (cut the same way); then it answers 503
    /// `app_store_unavailable` and records nothing.
    public var appStoreRestoreBudget: Duration
    /// Development tokens and stub receipts are refused at start unless the server listens on a
    /// loopback address only, or this is set (`--allow-development-on-public-address`): with them,
    /// `dev:<uid>` impersonates any user and a stub buys anything.
    public var allowsDevelopmentOnPublicAddress: Bool
    /// How often the Google certificate file (`auth.googleCertificatesPath`) is checked for a new
    /// version; SIGHUP re-reads it at once. A file that cannot be used keeps the keys in use. With
    /// `auth.googleCertificatesURL`, the shortest time between two fetches (and the first pause after a
    /// failed one): the document is fetched again when its `Cache-Control: max-age` runs out.
    public var googleCertificatesCheckInterval: Duration
    /// When set, `GET /metrics` answers only `Authorization: Bearer <this>` (401 otherwise).
    public var metricsToken: String?
    /// How many proofs may be verified at once, each on a thread of its own (``VerificationExecutor``).
    public var verificationThreads: Int
    /// The most connections open at once; past it a newcomer displaces the connection that has waited
    /// longest for a request, and is refused only when all are busy (``ConnectionTable``).
    public var maxConnections: Int
    /// How long a connection may wait for a whole request head: from when it opens, and from the end
    /// of each response (keep-alive). Then it is closed.
    public var idleTimeout: Duration
    /// Restores per user (each asks Apple's API, whose quota the app shares).
    public var restoreLimit: RateLimit
    /// Refused proofs per user (each costs a verification); past it, that user's proofs wait.
    public var refusedProofLimit: RateLimit
    /// Purchase requests per user, accepted or not; off by default.
    public var purchaseLimit: RateLimit
    /// Calls to Apple made inside one user's purchase requests (pricing classic receipts' new entries);
    /// past it, entries are recorded unpriced and a sync prices them.
    public var priceLookupLimit: RateLimit
    /// Refused notifications per client address (each costs a verification); past it, that address's
    /// notifications are answered 429 before they are read.
    public var refusedNotificationLimit: RateLimit
    /// The proxies whose `X-Forwarded-For` names the client (`--trusted-proxy`); none by default, and then
    /// the client is always the TCP peer.
    public var trustedProxies: TrustedProxies
    /// The webhook delivery worker's timeout, retry schedule and concurrency; nil: this server delivers
    /// none (others sharing the database still do, and events are always written to the outbox).
    public var webhooks: WebhookDeliverySettings?
    /// Where webhooks may go, checked when an endpoint is added and at each delivery: public addresses,
    /// and loopback ones too with `--webhook-allow-loopback` (development and tests).
    public var webhookDestinations: WebhookDestinations

    public static let defaultBodyLimit = 64 * 1024
    public static let defaultMaxConnections = 4096
    public static let defaultRestoreLimit = RateLimit(count: 10, seconds: 3600)
    public static let defaultRefusedProofLimit = RateLimit(count: 30, seconds: 600)
    public static let defaultPriceLookupLimit = RateLimit(count: 20, seconds: 600)
    /// The most App Store notifications read or verified at once, from every sender together: eight
    /// per verification thread (a notification is verified in about a millisecond, so that is a few
    /// milliseconds of queue; Apple sends them one at a time per event).
    public static func notificationsInFlight(threads: Int) -> Int { 8 * max(1, threads) }
    public static let defaultRefusedNotificationLimit = RateLimit(count: 30, seconds: 60)
    /// The most bytes of request headers, one field or all: a Firebase ID token is about 1 KiB, at most
    /// 8 KiB with custom claims. A half-open connection holds at most this much.
    public static let maxHeaderBytes = 16 * 1024
    public static let defaultBundleId = VerifierConfiguration.defaultBundleId
    /// The shortest stub HMAC secret accepted: 32 bytes, the key size of HMAC-SHA256.
    public static let minimumStubSecretBytes = 32

    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        bodyLimit: Int = ServerConfiguration.defaultBodyLimit,
        requestTimeout: Duration = .seconds(10),
        shutdownGracePeriod: Duration = .seconds(10),
        auth: AuthConfiguration = AuthConfiguration(),
        receipts: VerifierConfiguration = VerifierConfiguration(bundleId: ServerConfiguration.defaultBundleId),
        notificationSweepInterval: Duration = .seconds(30),
        firstPurchaseCatchUpInterval: Duration = .seconds(30),
        appStoreAPI: AppStoreServerAPIConfiguration? = nil,
        appStoreSyncInterval: Duration? = nil,
        appStorePriceBudget: Duration = .seconds(3),
        appStoreRestoreBudget: Duration = .seconds(6),
        allowsDevelopmentOnPublicAddress: Bool = false,
        googleCertificatesCheckInterval: Duration = .seconds(60),
        metricsToken: String? = nil,
        verificationThreads: Int = ProcessInfo.processInfo.activeProcessorCount,
        maxConnections: Int = ServerConfiguration.defaultMaxConnections,
        idleTimeout: Duration = .seconds(15),
        restoreLimit: RateLimit = ServerConfiguration.defaultRestoreLimit,
        refusedProofLimit: RateLimit = ServerConfiguration.defaultRefusedProofLimit,
        purchaseLimit: RateLimit = .off,
        priceLookupLimit: RateLimit = ServerConfiguration.defaultPriceLookupLimit,
        refusedNotificationLimit: RateLimit = ServerConfiguration.defaultRefusedNotificationLimit,
        trustedProxies: TrustedProxies = .none,
        webhooks: WebhookDeliverySettings? = .standard,
        webhookDestinations: WebhookDestinations = .publicOnly
    ) {
        self.host = host
        self.port = port
        self.bodyLimit = bodyLimit
        self.requestTimeout = requestTimeout
        self.shutdownGracePeriod = shutdownGracePeriod
        self.auth = auth
        self.receipts = receipts
        self.notificationSweepInterval = notificationSweepInterval
        self.firstPurchaseCatchUpInterval = firstPurchaseCatchUpInterval
        self.appStoreAPI = appStoreAPI
        self.appStoreSyncInterval = appStoreSyncInterval
        self.appStorePriceBudget = appStorePriceBudget
        self.appStoreRestoreBudget = appStoreRestoreBudget
        self.allowsDevelopmentOnPublicAddress = allowsDevelopmentOnPublicAddress
        self.googleCertificatesCheckInterval = googleCertificatesCheckInterval
        self.metricsToken = metricsToken
        self.verificationThreads = verificationThreads
        self.maxConnections = maxConnections
        self.idleTimeout = idleTimeout
        self.restoreLimit = restoreLimit
        self.refusedProofLimit = refusedProofLimit
        self.purchaseLimit = purchaseLimit
        self.priceLookupLimit = priceLookupLimit
        self.refusedNotificationLimit = refusedNotificationLimit
        self.trustedProxies = trustedProxies
        self.webhooks = webhooks
        self.webhookDestinations = webhookDestinations
    }

    /// The time a request keeps after a call to Apple for the ledger write that follows it: a second,
    /// or a quarter of the request timeout when that is shorter.
    public var appStoreLedgerReserve: Duration { min(.seconds(1), requestTimeout / 4) }

    /// Clear errors for settings that cannot work. (Auth and receipt settings are checked further when
    /// the application is built from them.)
    public func validate() throws(ConfigurationError) {
        guard !host.isEmpty else { throw ConfigurationError("the listen host is empty") }
        guard (0...65535).contains(port) else { throw ConfigurationError("port \(port) is not between 0 and 65535") }
        guard (1024...(64 * 1024 * 1024)).contains(bodyLimit) else {
            throw ConfigurationError("the body limit must be between 1024 bytes and 64 MiB, got \(bodyLimit)")
        }
        guard requestTimeout > .zero, requestTimeout <= .seconds(600) else {
            throw ConfigurationError("the request timeout must be more than 0 and at most 600 seconds")
        }
        guard shutdownGracePeriod >= .zero, shutdownGracePeriod <= .seconds(600) else {
            throw ConfigurationError("the shutdown grace period must be between 0 and 600 seconds")
        }
        guard notificationSweepInterval >= .milliseconds(10) else {
            throw ConfigurationError("the notification sweep interval must be at least 10 ms")
        }
        guard firstPurchaseCatchUpInterval >= .milliseconds(10) else {
            throw ConfigurationError("the first-purchase catch-up interval must be at least 10 ms")
        }
        if let appStoreAPI {
            do {
                try appStoreAPI.validate()
            } catch {
                throw ConfigurationError("App Store Server API: \(error.message)")
            }
            guard appStoreAPI.bundleId == receipts.bundleId else {
                throw ConfigurationError("the App Store Server API's bundle id differs from the receipts' bundle id")
            }
        }
        for (name, budget) in [("price", appStorePriceBudget), ("restore", appStoreRestoreBudget)] {
            guard budget >= .milliseconds(100), budget <= .seconds(600) else {
                throw ConfigurationError("the App Store \(name) budget must be between 0.1 and 600 seconds")
            }
        }
        if let appStoreSyncInterval {
            guard appStoreAPI != nil else {
                throw ConfigurationError("the App Store sync needs the App Store Server API configured")
            }
            guard appStoreSyncInterval >= .seconds(1) else {
                throw ConfigurationError("the App Store sync interval must be at least 1 second")
            }
        }
        if let googlePlay {
            do {
                try googlePlay.api.validate()
            } catch {
                throw ConfigurationError("Google Play: \(error.message)")
            }
            guard googlePlay.verificationBudget >= .milliseconds(100), googlePlay.verificationBudget <= .seconds(600)
            else {
                throw ConfigurationError("the Google Play verification budget must be between 0.1 and 600 seconds")
            }
            guard googlePlay.priceBudget >= .milliseconds(100), googlePlay.priceBudget <= .seconds(600) else {
                throw ConfigurationError("the Google Play price budget must be between 0.1 and 600 seconds")
            }
            if let interval = googlePlay.syncInterval, interval < .seconds(1) {
                throw ConfigurationError("the Google Play sync interval must be at least 1 second")
            }
            if let push = googlePlay.push, push.audience.isEmpty || push.serviceAccountEmail.isEmpty {
                throw ConfigurationError("Google Play pushes need an audience and a service account email")
            }
        }
        guard (1...256).contains(verificationThreads) else {
            throw ConfigurationError("the verification threads must be between 1 and 256, got \(verificationThreads)")
        }
        guard (1...1_000_000).contains(maxConnections) else {
            throw ConfigurationError("the connection limit must be between 1 and 1000000, got \(maxConnections)")
        }
        guard idleTimeout >= .milliseconds(100), idleTimeout <= .seconds(3600) else {
            throw ConfigurationError("the idle timeout must be between 0.1 and 3600 seconds")
        }
        guard googleCertificatesCheckInterval >= .milliseconds(10) else {
            throw ConfigurationError("the Google certificate check interval must be at least 10 ms")
        }
        try validateDevelopmentSwitches()
    }

    /// What the application would build from `auth`, `receipts` and `metricsToken`, built once here so
    /// that a setting that cannot work (a short admin token, half a Firebase configuration, no root)
    /// stops `serve` before the database or the network is touched. (``buildApplication`` builds them
    /// again; commands that do not serve need no way to sign in.)
    public func validateCredentials() throws(ConfigurationError) {
        do {
            _ = try Authenticator(configuration: auth)
        } catch {
            throw ConfigurationError("auth: \(error.description)")
        }
        do {
            _ = try ReceiptVerifier(configuration: receipts)
        } catch {
            throw ConfigurationError("receipts: \(error)")
        }
        if let metricsToken {
            do {
                _ = try AdminToken(metricsToken)
            } catch {
                throw ConfigurationError("metrics token: \(error.description)")
            }
        }
    }

    private func validateDevelopmentSwitches() throws(ConfigurationError) {
        if let secret = receipts.stubSecret, secret.utf8.count < Self.minimumStubSecretBytes {
            throw ConfigurationError(
                "the stub secret is \(secret.utf8.count) bytes; it must be at least \(Self.minimumStubSecretBytes)")
        }
        var switches: [String] = []
        if auth.acceptsDevelopmentTokens { switches.append("development tokens (--dev-auth)") }
        if receipts.acceptsStubReceipts { switches.append("stub receipts (--stub-receipts)") }
        guard !switches.isEmpty, !allowsDevelopmentOnPublicAddress else { return }
        // Behind a proxy a loopback listener is as public as the proxy: it passes anyone's requests on.
        if !trustedProxies.isEmpty {
            throw ConfigurationError(
                "\(switches.joined(separator: " and ")) are on, and --trusted-proxy says a proxy passes others' "
                    + "requests to this server: anyone who reaches the proxy could sign in as any user or buy without "
                    + "paying. Pass --allow-development-on-public-address if that is really meant")
        }
        guard !Self.isLoopback(host) else { return }
        throw ConfigurationError(
            "\(switches.joined(separator: " and ")) are on, but the server listens on \(host), which is not a loopback "
                + "address: anyone who reaches it could sign in as any user or buy without paying. Listen on 127.0.0.1, "
                + "or pass --allow-development-on-public-address if that is really meant")
    }

    /// True for addresses only this machine can reach: 127.0.0.0/8, ::1 and `localhost`. Any other
    /// name counts as public: it may resolve to anything.
    static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}

/// A configuration value that cannot work, with a message for the operator.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
