import Hummingbird
import Postgres

/// `GET /metrics` (Prometheus text format) and `GET /openapi.yaml` (the JSON surface's OpenAPI 3.1
/// document, `docs/openapi.yaml` embedded at build time).
///
/// With `metricsToken`, `/metrics` answers only `Authorization: Bearer <token>`: its figures (request
/// rates, refusal reasons, pool size) are for the operator, not for whoever reaches the port.
struct OperationsRoutes {
    let metrics: ShopMetrics
    let client: PostgresClient
    var metricsToken: AdminToken? = nil
    var connections: ConnectionLimiter? = nil

    /// The document as kept in the repo.
    static var openAPIDocument: String { embeddedOpenAPIDocuments.first?.sql ?? "" }

    func register(on router: Router<some RequestContext>) {
        router.get("metrics") { request, _ in
            if let metricsToken {
                let presented = try? AuthHeaders.bearerToken(in: request.headers)
                guard let presented, metricsToken.matches(presented) else {
                    return Response(status: .unauthorized, headers: [.wwwAuthenticate: "Bearer"])
                }
            }
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(
                    byteBuffer: ByteBuffer(
                        bytes: metrics.exposition(pool: client.statistics, connections: connections?.counts))))
        }
        router.get("openapi.yaml") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/yaml; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: Self.openAPIDocument)))
        }
    }
}
