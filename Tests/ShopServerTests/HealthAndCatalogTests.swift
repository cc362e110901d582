import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Postgres
import Receipts
import ShopServer
import TestSupport
import Testing

@Suite("Health and catalog endpoints")
struct HealthAndCatalogTests {
    struct Catalog: Decodable {
        struct Item: Decodable {
            struct Price: Decodable {
                let amountMilli: Int64
                let currency: String
            }

            let kind: String
            let index: Int
            let productId: String?
            let name: String
            let description: String
            let price: Price
        }

        let items: [Item]
    }

    @Test("GET /api/v1/catalog lists the 13 items with their product ids and KRW prices")
    func catalog() async throws {
        try await withTestDatabase { db in
            let app = try buildApplication(
                configuration: ServerTest.configuration(), client: db.client, logger: ServerTest.quietLogger)
            try await app.test(.router) { client in
                try await client.execute(uri: "/api/v1/catalog", method: .get) { response in
                    #expect(response.status == .ok)
                    let catalog = try JSONDecoder().decode(Catalog.self, from: Data(String(buffer: response.body).utf8))
                    #expect(catalog.items.count == 13)
                    let faces = catalog.items.filter { $0.kind == "face" }
                    let backgrounds = catalog.items.filter { $0.kind == "background" }
                    #expect(faces.map(\.index) == [0, 1, 2, 3, 4])
                    #expect(backgrounds.map(\.index) == [0, 1, 2, 3, 4, 5, 6, 7])
                    #expect(faces.map(\.price.amountMilli) == [0, 1_200_000, 2_500_000, 2_500_000, 2_500_000])
                    #expect(
                        backgrounds.map(\.price.amountMilli) == [
                            0, 1_200_000, 1_200_000, 1_200_000, 2_500_000, 2_500_000, 2_500_000, 2_500_000,
                        ])
                    #expect(catalog.items.allSatisfy { $0.price.currency == "KRW" })
                    #expect(faces.map(\.productId) == [nil] + (1...4).map { "com.memolease.sesac1.sprout\($0)" })
                    #expect(
                        backgrounds.map(\.productId) == [nil] + (1...7).map { "com.memolease.sesac1.background\($0)" })
                    #expect(faces[1].name == "튼튼 새싹" && backgrounds[7].name == "뮤지션 작업실")
                    #expect(backgrounds[0].description == "새싹들을 많이 마주치는 매력적인 하늘 공원입니다")
                }
            }
        }
    }

    @Test("/healthz answers (GET and HEAD); /readyz is 200 with the database up and 503 when it cannot be reached")
    func health() async throws {
        try await withTestDatabase { db in
            let app = try buildApplication(
                configuration: ServerTest.configuration(), client: db.client, logger: ServerTest.quietLogger)
            try await app.test(.router) { client in
                try await client.execute(uri: "/healthz", method: .get) { #expect($0.status == .ok) }
                try await client.execute(uri: "/healthz", method: .head) { #expect($0.status == .ok) }
                try await client.execute(uri: "/readyz", method: .head) { #expect($0.status == .ok) }
                try await client.execute(uri: "/readyz", method: .get) { #expect($0.status == .ok) }
            }
        }
        // A client pointed at a port nothing listens on.
        let port = try TestCluster.freePort()
        let unreachable = PostgresClient(
            configuration: .init(
                connection: .init(url: "postgresql://127.0.0.1:\(port)/none?connect_timeout=2"), minimumConnections: 0))
        let app = try buildApplication(
            configuration: ServerTest.configuration(), client: unreachable, logger: ServerTest.quietLogger)
        try await app.test(.router) { client in
            try await client.execute(uri: "/healthz", method: .get) { #expect($0.status == .ok) }
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(String(buffer: response.body).contains("database_unavailable"))
            }
            try await client.execute(uri: "/readyz", method: .head) { #expect($0.status == .serviceUnavailable) }
        }
    }

    @Test(
        "/readyz is 503 database_read_only on a database that takes no writes (a standby, a demoted primary): it cannot record a purchase; /livez and /healthz stay 200"
    )
    func readOnlyIsNotReady() async throws {
        try await withTestDatabase { db in
            try await db.client.execute(
                PostgresQuery(unsafeSQL: "ALTER DATABASE \"\(db.name)\" SET default_transaction_read_only = on"))
            // New sessions are read-only, as every session on a standby is.
            let readOnly = PostgresClient(configuration: .init(connection: .init(url: db.url), minimumConnections: 0))
            let app = try buildApplication(
                configuration: ServerTest.configuration(), client: readOnly, logger: ServerTest.quietLogger)
            try await app.test(.router) { client in
                try await client.execute(uri: "/readyz", method: .get) { response in
                    #expect(response.status == .serviceUnavailable)
                    #expect(String(buffer: response.body).contains("database_read_only"))
                }
                try await client.execute(uri: "/readyz", method: .head) { #expect($0.status == .serviceUnavailable) }
                try await client.execute(uri: "/livez", method: .get) { #expect($0.status == .ok) }
                try await client.execute(uri: "/livez", method: .head) { #expect($0.status == .ok) }
                try await client.execute(uri: "/healthz", method: .get) { #expect($0.status == .ok) }
            }
            await readOnly.shutdown()
        }
    }

    @Test("invalid configuration is refused with a clear message")
    func configurationValidation() throws {
        try ServerTest.configuration().validate()
        try ServerTest.configuration().validateCredentials()
        let refusals: [(String, (inout ServerConfiguration) -> Void)] = [
            ("port 70000", { $0.port = 70_000 }), ("host is empty", { $0.host = "" }),
            ("body limit", { $0.bodyLimit = 10 }), ("request timeout", { $0.requestTimeout = .zero }),
            ("verification threads", { $0.verificationThreads = 0 }),
            ("connection limit", { $0.maxConnections = 0 }), ("idle timeout", { $0.idleTimeout = .zero }),
            ("admin token must be at least 16", { $0.auth.adminToken = "short" }),
            ("metrics token: the admin token must be at least 16", { $0.metricsToken = "short" }),
            ("no way to sign in", { $0.auth.acceptsDevelopmentTokens = false }),
            ("no root certificates", { $0.receipts.rootCertificates = [] }),
        ]
        for (message, change) in refusals {
            var configuration = ServerTest.configuration()
            change(&configuration)
            #expect(throws: ConfigurationError.self, "\(message)") {
                try configuration.validate()
                try configuration.validateCredentials()
            }
            do {
                try configuration.validate()
                try configuration.validateCredentials()
            } catch {
                #expect(error.description.contains(message), "\(error.description)")
            }
        }
        let client = PostgresClient(
            configuration: .init(connection: .init(url: "postgresql:///unused"), minimumConnections: 0))
        // No way to sign in, a short admin token, a stub secret without stubs...: refused at build time.
        #expect(throws: ConfigurationError.self) {
            try buildApplication(configuration: ServerConfiguration(), client: client)
        }
        var configuration = ServerTest.configuration()
        configuration.auth.adminToken = "short"
        #expect(throws: ConfigurationError.self) { try buildApplication(configuration: configuration, client: client) }
        configuration = ServerTest.configuration()
        configuration.receipts.rootCertificates = []
        #expect(throws: ConfigurationError.self) { try buildApplication(configuration: configuration, client: client) }
    }
}
