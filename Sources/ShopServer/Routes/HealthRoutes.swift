import Hummingbird
import Postgres

/// `GET /healthz` (the process answers) and `GET /readyz` (the database answers too, within
/// `probeTimeout`: a load balancer asks often and must learn quickly that a hung database is not ready).
struct HealthRoutes {
    let client: PostgresClient
    let probeTimeout: Duration

    /// Long enough for a healthy database, short enough that with the client's cancel grace on top
    /// `/readyz` answers within a second whatever the database does.
    static func probeTimeout(cancelGrace: Duration) -> Duration {
        max(.milliseconds(200), .milliseconds(900) - cancelGrace)
    }

    struct Status: ResponseEncodable {
        let status: String
    }

    func register(on router: Router<some RequestContext>) {
        router.get("healthz") { _, _ in Status(status: "ok") }
        // Probes that ask with HEAD (some load balancers' defaults) get the status without the body.
        router.head("healthz") { _, _ in HTTPResponse.Status.ok }
        router.get("readyz") { _, _ -> EditedResponse<ReadinessBody> in
            guard await isReady() else {
                return EditedResponse(
                    status: .serviceUnavailable,
                    response: ReadinessBody(code: "database_unavailable", message: "the database does not answer"))
            }
            return EditedResponse(status: .ok, response: ReadinessBody(status: "ready"))
        }
        router.head("readyz") { _, _ in await isReady() ? HTTPResponse.Status.ok : .serviceUnavailable }
    }

    /// Whether the database answers within `probeTimeout`.
    private func isReady() async -> Bool {
        do {
            try await withDeadline(probeTimeout) { _ = try await client.query("SELECT 1") }
            return true
        } catch {
            return false
        }
    }
}

/// `{"status": "ready"}`, or `{"error": {"code", "message"}}` when the database does not answer.
struct ReadinessBody: ResponseEncodable {
    struct Detail: Encodable {
        let code: String
        let message: String
    }

    let status: String?
    let error: Detail?

    init(status: String) {
        self.status = status
        self.error = nil
    }

    init(code: String, message: String) {
        self.status = nil
        self.error = Detail(code: code, message: message)
    }
}
