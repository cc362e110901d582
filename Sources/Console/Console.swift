import Foundation
import Hummingbird
import Ledger
import Logging
import Postgres
import ServiceLifecycle

/// The console's settings (`serve --console-port`, docs/console.md).
public struct ConsoleConfiguration: Sendable {
    public var host: String
    public var port: Int
    public var sessions: ConsoleSessionSettings
    public var signInLimits: SignInLimits
    /// The scrypt cost of passwords set from the console's process (tests lower it).
    public var passwordCost: PasswordHash.Cost

    public init(
        host: String = "127.0.0.1", port: Int, sessions: ConsoleSessionSettings = .init(),
        signInLimits: SignInLimits = .init(), passwordCost: PasswordHash.Cost = .standard
    ) {
        self.host = host
        self.port = port
        self.sessions = sessions
        self.signInLimits = signInLimits
        self.passwordCost = passwordCost
    }
}

/// What the console's pages are made from: the same domain services as the JSON API and the CLI.
public struct ConsoleServices: Sendable {
    public var client: PostgresClient
    /// Asks Apple for a customer's history (nil: the App Store Server API is not configured).
    public var appleHistory: AppleHistory?
    /// The clock of sessions, sign-in windows and the audit (tests drive it).
    public var clock: @Sendable () -> Date

    public init(
        client: PostgresClient, appleHistory: AppleHistory? = nil, clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.client = client
        self.appleHistory = appleHistory
        self.clock = clock
    }
}

/// Builds the console's router: public sign-in pages, then the signed-in groups by role.
public func buildConsoleRouter(
    configuration: ConsoleConfiguration, services: ConsoleServices, logger: Logger
) -> Router<ConsoleContext> {
    let client = services.client
    let sessions = ConsoleSessions(client: client, settings: configuration.sessions, clock: services.clock)
    let audit = ConsoleAudit(client: client, clock: services.clock)
    let operators = OperatorStore(client: client, cost: configuration.passwordCost)
    let ledger = LedgerStore(client: client, logger: logger)
    let router = Router(context: ConsoleContext.self)
    router.add(middleware: SecurityHeadersMiddleware(logger: logger))
    SignInRoutes(
        signIn: SignIn(operators: operators, sessions: sessions, audit: audit, limits: configuration.signInLimits)
    ).register(on: router)
    let signedIn = router.group().add(middleware: SessionMiddleware(sessions: sessions, logger: logger))
    SignOutRoutes(sessions: sessions, audit: audit).register(on: signedIn)
    let support = signedIn.group().add(middleware: RoleMiddleware(minimum: .support))
    CustomerRoutes(
        ledger: ledger, catalog: CatalogStore(client: client), directory: CustomerDirectory(client: client),
        audit: audit, appleHistory: services.appleHistory
    ).register(on: support)
    let finance = signedIn.group().add(middleware: RoleMiddleware(minimum: .finance))
    MoneyRoutes(client: client, audit: audit, clock: services.clock, logger: logger).register(on: finance)
    let admin = signedIn.group().add(middleware: RoleMiddleware(minimum: .admin))
    ShopRoutes(client: client, audit: audit).register(on: admin)
    return router
}

/// The console as an application of its own, on its own port: `serve` runs it beside the shop's.
/// `services` are what it runs besides (the shop's application runs the database client; a test's
/// console alone passes the client).
public func buildConsole(
    configuration: ConsoleConfiguration, services: ConsoleServices, logger: Logger,
    running: [any Service] = []
) -> some ApplicationProtocol {
    Application(
        router: buildConsoleRouter(configuration: configuration, services: services, logger: logger),
        configuration: .init(
            address: .hostname(configuration.host, port: configuration.port), serverName: "shopledger-console"),
        services: running,
        logger: logger)
}
