import Hummingbird
import Ledger
import Logging
import Postgres

/// The composition root: builds the HTTP application from its configuration and the database
/// client. `shopledger serve` and the tests both call it.
public func buildApplication(
    configuration: ServerConfiguration,
    client: PostgresClient,
    logger: Logger = Logger(label: "shopledger.server")
) throws -> some ApplicationProtocol {
    try configuration.validate()
    let router = Router(context: BasicRequestContext.self)
    router.addMiddleware {
        LogRequestsMiddleware(.info)
    }
    HealthRoutes(client: client).register(on: router)
    CatalogRoutes(catalog: CatalogStore(client: client)).register(on: router.group("api/v1"))
    return Application(
        router: router,
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "shopledger"),
        services: [client],
        logger: logger
    )
}
