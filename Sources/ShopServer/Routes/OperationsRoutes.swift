import Hummingbird
import Postgres

/// `GET /metrics` (Prometheus text format) and `GET /openapi.yaml` (the JSON surface's OpenAPI 3.1
/// document, `docs/openapi.yaml` embedded at build time).
struct OperationsRoutes {
    let metrics: ShopMetrics
    let client: PostgresClient

    /// The document as kept in the repo.
    static var openAPIDocument: String { embeddedOpenAPIDocuments.first?.sql ?? "" }

    func register(on router: Router<some RequestContext>) {
        router.get("metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition(pool: client.statistics))))
        }
        router.get("openapi.yaml") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/yaml; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: Self.openAPIDocument)))
        }
    }
}
