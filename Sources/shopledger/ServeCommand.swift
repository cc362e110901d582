import ArgumentParser
import Hummingbird
import Logging
import ShopServer

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the shop API (migrating the database first). Stops gracefully on SIGINT/SIGTERM.")

    @Option(help: "Address to listen on. Default: $SHOPLEDGER_HOST or 127.0.0.1")
    var host: String?

    @Option(help: "Port to listen on. Default: $SHOPLEDGER_PORT or 8080")
    var port: Int?

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let logger = CommandLogging.logger()
        let configuration = ServerConfiguration(
            host: host ?? Environment.string("SHOPLEDGER_HOST") ?? "127.0.0.1",
            port: port ?? Environment.int("SHOPLEDGER_PORT") ?? 8080)
        do {
            try configuration.validate()
        } catch {
            throw ValidationError(error.description)
        }
        // withClient migrates first, and stops the private cluster after the server has shut down.
        try await database.withClient(logger: logger) { client in
            let app = try buildApplication(configuration: configuration, client: client, logger: logger)
            logger.notice("shopledger serving on http://\(configuration.host):\(configuration.port)")
            try await app.runService()
        }
    }
}
