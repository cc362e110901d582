import AppStoreServerAPI
import ArgumentParser
import BuildInfo
import Console
import Hummingbird
import Ledger
import Logging
import Postgres
import Receipts
import Reports
import ServiceLifecycle
import ShopServer
import UnixSignals
import Webhooks

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the shop API (migrating the database first). Stops gracefully on SIGINT/SIGTERM.")

    @OptionGroup var server: ServerOptions

    @OptionGroup var console: ConsoleOptions

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = CommandLogging.logger()
        var configuration = try server.configuration()
        let consoleConfiguration = try console.configuration()
        if let consoleConfiguration, consoleConfiguration.port == configuration.port,
            consoleConfiguration.host == configuration.host
        {
            throw ValidationError("--console-port must differ from --port: the console has a listener of its own.")
        }
        // With --google-certs-url the keys are fetched now: a URL that gives none stops the start, as an
        // unavailable service (exit 69), not a usage error: the same command may work once Google answers.
        do {
            configuration.auth = try await configuration.auth.fetchingGoogleCertificates(logger: logger)
        } catch {
            throw ServiceUnavailable(description: "\(server.googleCertificatesURLSource): \(error.description)")
        }
        // Google Play's push certificates are fetched now too (a URL that gives none stops the start).
        configuration.googlePlay = try await server.googlePlay.settings(logger: logger)
        // Every setting is checked before the private cluster starts or a port is bound.
        do {
            try configuration.validate()
            try configuration.validateCredentials()
        } catch {
            throw ValidationError(error.description)
        }
        if configuration.auth.acceptsDevelopmentTokens {
            logger.warning("development tokens (dev:<uid>) are accepted: never do this in production")
        }
        if configuration.receipts.acceptsStubReceipts {
            logger.warning("stub receipts and stub notifications are accepted: never do this in production")
        }
        if configuration.webhookDestinations.allowsLoopback {
            logger.warning(
                "webhooks may go to this machine's loopback addresses (--webhook-allow-loopback): never do this in production"
            )
        }
        // Under systemd's Type=notify: READY=1 once the port is bound (the database answered the migration
        // just before), STOPPING=1 when SIGTERM or SIGINT arrives.
        let notifier = SystemdNotifier()
        // withClient migrates first, and stops the private cluster after the server has shut down.
        try await database.withClient(
            schema: .migrate(lockTimeout: DatabaseOptions.serveMigrationLockTimeout), serving: true, logger: logger
        ) { client in
            let listening = "serving on http://\(configuration.host):\(configuration.port)"
            let app = try Self.application(configuration, client: client, logger: logger) {
                Self.tell(notifier, "READY=1\nSTATUS=\(listening)", logger: logger)
            }
            logger.notice(
                "shopledger \(listening)",
                metadata: ["version": "\(BuildInfo.version)", "commit": "\(BuildInfo.commit)"])
            // After SIGINT/SIGTERM the process exits within the grace period: in-flight requests get all of
            // it but a reserve, then what is left (a query stuck on a dead database host) is cancelled.
            var services: [any Service] = [app]
            if let consoleConfiguration {
                services.append(
                    try Self.console(consoleConfiguration, server: configuration, client: client, logger: logger))
                logger.notice(
                    "shopledger console on http://\(consoleConfiguration.host):\(consoleConfiguration.port)")
            }
            var groupConfiguration = ServiceGroupConfiguration(
                services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            groupConfiguration.maximumGracefulShutdownDuration =
                configuration.shutdownGracePeriod - Self.cancellationReserve(configuration.shutdownGracePeriod)
            groupConfiguration.maximumCancellationDuration = .seconds(5)
            let shutdownLog = ShutdownLog(logger: logger, grace: configuration.shutdownGracePeriod) {
                Self.tell(notifier, "STOPPING=1", logger: logger)
            }
            shutdownLog.start()
            do {
                try await ServiceGroup(configuration: groupConfiguration).run()
            } catch {
                shutdownLog.stopped(error: error)
                throw error
            }
            shutdownLog.stopped()
        }
    }

    /// The part of the grace kept for cancelling what is still running: a second, a quarter of a short
    /// grace. Cancelling took 0.3 s with purchases hung on a silently dead database host (make test-ha).
    static func cancellationReserve(_ grace: Duration) -> Duration {
        min(.seconds(1), grace / 4)
    }

    /// Tells systemd `state` when it asked (`Type=notify`); a failure is logged, and the start goes on
    /// (systemd then ends it at its start timeout, saying so).
    private static func tell(_ notifier: SystemdNotifier?, _ state: String, logger: Logger) {
        guard let notifier else { return }
        do {
            try notifier.notify(state)
        } catch {
            logger.warning("could not tell systemd \(state.prefix { $0 != "\n" }): \(error.description)")
        }
    }

    /// The console's application: the same database client, and Apple's API when it is configured.
    private static func console(
        _ configuration: ConsoleConfiguration, server: ServerConfiguration, client: PostgresClient, logger: Logger
    ) throws -> some Service {
        var services = ConsoleServices(client: client)
        if let api = server.appStoreAPI {
            do {
                let appStore = try AppStoreServerAPIClient(
                    configuration: api, prover: try ReceiptVerifier(configuration: server.receipts), logger: logger)
                services.appleHistory = AppleHistory(api: appStore, ledger: LedgerStore(client: client, logger: logger))
            } catch {
                throw ValidationError("console: the App Store Server API: \(error)")
            }
        }
        return buildConsole(configuration: configuration, services: services, logger: logger)
    }

    private static func application(
        _ configuration: ServerConfiguration, client: PostgresClient, logger: Logger,
        listening: @escaping @Sendable () async -> Void
    ) throws -> some ApplicationProtocol {
        do {
            // The composition root: the reports' checks and day cache, which ShopServer does not know.
            var hooks = ServerHooks(
                reconciliationChecks: ReconciliationChecks.all, firstPurchaseInvalidation: .reportDays)
            hooks.serverRunning = listening
            return try buildApplication(configuration: configuration, client: client, logger: logger, hooks: hooks)
        } catch let error as ConfigurationError {
            throw ValidationError(error.description)
        }
    }
}
