import AppStoreServerAPI
import BuildInfo
import Foundation
import GooglePlay
import Hummingbird
import HummingbirdCore
import Ledger
import Logging
import NIOCore
import Postgres
import Receipts
import ServiceLifecycle
import Shop
import Webhooks

/// The composition root: builds the HTTP application from its configuration and the database client.
/// `shopledger serve` and the tests both call it.
///
/// - Parameters:
///   - prover: what proves purchases; by default a ``ReceiptVerifier`` built from `configuration.receipts`.
///   - metrics: the metrics registry `/metrics` serves.
/// - Throws: ``ConfigurationError`` naming the setting that cannot work.
public func buildApplication(
    configuration: ServerConfiguration,
    client: PostgresClient,
    logger: Logger = Logger(label: "shopledger.server"),
    prover: (any PurchaseProver)? = nil,
    metrics: ShopMetrics = ShopMetrics(),
    hooks: ServerHooks = .ledgerOnly
) throws -> some ApplicationProtocol {
    try shopApplication(
        configuration: configuration, client: client, logger: logger, prover: prover, metrics: metrics, hooks: hooks
    ).application
}

/// The application ``buildApplication(configuration:client:logger:prover:metrics:hooks:)`` returns, with the
/// routes its router holds (for the test that every route has its auth decided).
func shopApplication(
    configuration: ServerConfiguration,
    client: PostgresClient,
    logger: Logger,
    prover: (any PurchaseProver)?,
    metrics: ShopMetrics,
    hooks: ServerHooks = .ledgerOnly
) throws -> (
    application: Application<ShopResponder<RouterResponder<ShopRequestContext>>>,
    routes: [Router<ShopRequestContext>.RouteDescription]
) {
    try configuration.validate()
    let authenticator: Authenticator
    do {
        authenticator = try Authenticator(configuration: configuration.auth)
    } catch {
        throw ConfigurationError("auth: \(error.description)")
    }
    let purchaseProver: any PurchaseProver
    do {
        // Every proof, from either surface, a notification or Apple's API, is verified on threads of its own,
        // purchases before notifications.
        purchaseProver = BoundedProver(
            inner: try prover ?? ReceiptVerifier(configuration: configuration.receipts),
            executor: VerificationExecutor(maximumThreads: configuration.verificationThreads))
    } catch {
        throw ConfigurationError("receipts: \(error)")
    }

    let ledger = LedgerStore(client: client, logger: logger)
    let body = RequestBody(limit: configuration.bodyLimit)
    let appStore = try appStoreClient(configuration, prover: purchaseProver, logger: logger, metrics: metrics)
    let limits = UserLimits(
        restores: configuration.restoreLimit, refusedProofs: configuration.refusedProofLimit,
        purchases: configuration.purchaseLimit, priceLookups: configuration.priceLookupLimit)
    let desk = PurchaseDesk(
        prover: purchaseProver, ledger: ledger, counters: metrics, appStore: appStore,
        priceBudget: configuration.appStorePriceBudget, ledgerReserve: configuration.appStoreLedgerReserve,
        limits: limits, logger: logger)

    let googlePlay = try googlePlayDesk(configuration, desk: desk, logger: logger, metrics: metrics)

    let router = Router(context: ShopRequestContext.self)
    router.add(middleware: ErrorMiddleware())
    HealthRoutes(client: client, probeTimeout: HealthRoutes.probeTimeout(cancelGrace: client.configuration.cancelGrace))
        .register(on: router)
    let metricsToken: AdminToken?
    do {
        metricsToken = try configuration.metricsToken.map { token throws(AuthConfigurationError) in
            try AdminToken(token)
        }
    } catch {
        throw ConfigurationError("metrics token: \(error.description)")
    }
    let connections = ConnectionLimiter(maximum: configuration.maxConnections, metrics: metrics)
    OperationsRoutes(metrics: metrics, client: client, metricsToken: metricsToken, connections: connections)
        .register(on: router)
    // Who may call a route is decided by the group it is registered on: the groups' middleware
    // authenticates and puts the caller in the context (RouteAccessTests lists every route's group).
    // SeSAC surface: every route is a signed-in user's, token in `idtoken`.
    let sesacUsers = router.group().add(middleware: UserAuthentication(authenticator: authenticator, header: .idtoken))
    SeSACUserRoutes(ledger: ledger, body: body).register(on: sesacUsers)
    SeSACShopRoutes(ledger: ledger, desk: desk, body: body).register(on: sesacUsers)
    // JSON surface: public routes, then a user group (`Authorization: Bearer`), then the admin group.
    let api = router.group("api/v1")
    CatalogRoutes(catalog: CatalogStore(client: client)).register(on: api)
    NotificationRoutes(
        prover: purchaseProver, ledger: ledger, metrics: metrics, body: body,
        admission: NotificationAdmission(
            refusals: configuration.refusedNotificationLimit,
            maximumInFlight: ServerConfiguration.notificationsInFlight(threads: configuration.verificationThreads))
    ).register(on: api)
    GooglePlayNotificationRoutes(
        verifier: configuration.googlePlay?.push.map {
            PubSubPushVerifier(
                audience: $0.audience, serviceAccountEmail: $0.serviceAccountEmail, certificates: $0.certificates)
        },
        packageName: configuration.googlePlay?.api.packageName, recording: googlePlay?.recording, ledger: ledger,
        metrics: metrics, body: body
    ).register(on: api)
    let apiUsers = api.group().add(middleware: UserAuthentication(authenticator: authenticator, header: .bearer))
    MeRoutes(ledger: ledger, body: body).register(on: apiUsers)
    PurchaseRoutes(desk: desk, body: body, googlePlay: googlePlay).register(on: apiUsers)
    RestoreRoutes(
        restores: appStore.map {
            RestoreDesk(
                api: $0, desk: desk, limit: limits.restores, budget: configuration.appStoreRestoreBudget,
                ledgerReserve: configuration.appStoreLedgerReserve)
        },
        body: body
    ).register(on: apiUsers)
    let admins = api.group().add(middleware: AdminAuthentication(authenticator: authenticator))
    AdminRoutes(ledger: ledger, client: client, checks: hooks.reconciliationChecks).register(on: admins)
    SupportRoutes(ledger: ledger, body: body).register(on: admins)
    AdminWebhookRoutes(
        store: WebhookStore(client: client), body: body, destinations: configuration.webhookDestinations
    ).register(on: admins)
    let catalogAdmin = AdminCatalogRoutes(catalog: CatalogStore(client: client), body: body)
    catalogAdmin.register(on: admins)
    catalogAdmin.registerGooglePlay(on: admins)

    let responder = ShopResponder(
        inner: router.buildResponder(), bodyLimit: configuration.bodyLimit, timeout: configuration.requestTimeout,
        cancellationAllowance: client.configuration.cancelGrace + .milliseconds(100), metrics: metrics,
        trustedProxies: configuration.trustedProxies)
    let sweeper = NotificationSweeper(
        ledger: ledger, interval: configuration.notificationSweepInterval, logger: logger, metrics: metrics)
    var services: [any Service] = [
        client, sweeper,
        BackupWatcher(
            log: BackupLog(client: client), interval: configuration.backupCheckInterval, logger: logger,
            metrics: metrics),
    ]
    if let invalidation = hooks.firstPurchaseInvalidation {
        services.append(
            FirstPurchaseSweeper(
                catchUp: FirstPurchaseCatchUp(client: client, invalidating: invalidation, logger: logger),
                interval: configuration.firstPurchaseCatchUpInterval))
    }
    if let webhooks = configuration.webhooks {
        services.append(
            WebhookDeliveryService(
                store: WebhookStore(client: client), settings: webhooks,
                userAgent: "ShopLedger-Webhooks/\(BuildInfo.version)", logger: logger, observer: metrics,
                destinations: configuration.webhookDestinations, resolver: SystemResolver()))
        services.append(
            WebhookRetentionService(store: WebhookStore(client: client), keep: webhooks.retention, logger: logger))
    }
    if let appStore, let interval = configuration.appStoreSyncInterval {
        let synchronizer = AppStoreSynchronizer(api: appStore, ledger: ledger, logger: logger)
        services.append(
            AppStoreSyncService(
                synchronizer: synchronizer, interval: interval, firstLookBack: 24 * 3600, logger: logger,
                counters: metrics))
    }
    if let googlePlay, let settings = configuration.googlePlay {
        if let interval = settings.syncInterval {
            services.append(
                GooglePlaySyncService(
                    synchronizer: GooglePlaySynchronizer(client: googlePlay.client, ledger: ledger, logger: logger),
                    interval: interval,
                    firstLookBack: TimeInterval(settings.syncLookBack.components.seconds), logger: logger))
        }
        if let certificates = settings.push?.certificates {
            if let url = certificates.url {
                services.append(
                    GoogleCertificateRefresher(
                        store: certificates, fetcher: GoogleCertificateFetcher(url: url),
                        minimumInterval: configuration.googleCertificatesCheckInterval, logger: logger,
                        metrics: metrics))
            } else if certificates.path != nil {
                services.append(
                    GoogleCertificateWatcher(
                        store: certificates, interval: configuration.googleCertificatesCheckInterval, logger: logger))
            }
        }
    }
    if let certificates = authenticator.certificateStore {
        if let url = certificates.url {
            services.append(
                GoogleCertificateRefresher(
                    store: certificates, fetcher: GoogleCertificateFetcher(url: url),
                    minimumInterval: configuration.googleCertificatesCheckInterval, logger: logger, metrics: metrics))
            // The fetch before the start brought the keys in use.
            metrics.recordGoogleCertificateFetch(ok: true)
        } else {
            services.append(
                GoogleCertificateWatcher(
                    store: certificates, interval: configuration.googleCertificatesCheckInterval, logger: logger))
        }
    }
    let application = Application(
        responder: responder,
        server: HTTPServerBuilder { responder in
            ShopHTTP1Channel(
                http1: HTTP1Channel(
                    responder: responder,
                    configuration: .init(
                        additionalChannelHandlers: [
                            ConnectionLimitHandler(limiter: connections),
                            MalformedRequestHandler(logger: logger, metrics: metrics),
                        ],
                        idleTimeout: TimeAmount(configuration.idleTimeout),
                        httpDecoderConfiguration: .init(
                            maxHeaderFieldSize: ServerConfiguration.maxHeaderBytes,
                            maxHeaderListSize: ServerConfiguration.maxHeaderBytes))))
        },
        configuration: .init(
            address: .hostname(configuration.host, port: configuration.port), serverName: "shopledger"),
        services: services,
        onServerRunning: { _ in await hooks.serverRunning() },
        logger: logger
    )
    return (application, router.routes)
}

/// The App Store Server API client when it is configured: it verifies with the same prover as the
/// purchase routes.
private func appStoreClient(
    _ configuration: ServerConfiguration, prover: any PurchaseProver, logger: Logger, metrics: ShopMetrics
) throws -> AppStoreServerAPIClient? {
    guard let settings = configuration.appStoreAPI else { return nil }
    do {
        return try AppStoreServerAPIClient(
            configuration: settings, prover: prover, logger: logger, observer: metrics)
    } catch {
        throw ConfigurationError("App Store Server API: \(error.message)")
    }
}

/// Google Play's desk when Google Play is configured.
private func googlePlayDesk(
    _ configuration: ServerConfiguration, desk: PurchaseDesk, logger: Logger, metrics: ShopMetrics
) throws -> GooglePlayDesk? {
    guard let settings = configuration.googlePlay else { return nil }
    do {
        return GooglePlayDesk(
            client: try GooglePlayClient(configuration: settings.api, logger: logger, observer: metrics),
            purchases: desk,
            verificationBudget: settings.verificationBudget, ledgerReserve: configuration.appStoreLedgerReserve,
            priceBudget: settings.priceBudget, logger: logger)
    } catch {
        throw ConfigurationError("Google Play: \(error.message)")
    }
}
