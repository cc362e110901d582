import Hummingbird
import Postgres

/// `GET /livez` and `GET /healthz` (the process answers; nothing else is asked) and `GET /readyz` (a
/// purchase can be recorded now: a database connection answered within `probeTimeout`, on a server that
/// takes writes, neither a standby in recovery nor a read-only session). A load balancer routes by
/// `/readyz` and must learn quickly that a hung database, or one that became a standby after a
/// failover, is not ready; an orchestrator restarts by `/livez` only, never because the database is away.
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
        for path in ["livez", "healthz"] {
            router.get(RouterPath(path)) { _, _ in Status(status: "ok") }
            // Probes that ask with HEAD (some load balancers' defaults) get the status without the body.
            router.head(RouterPath(path)) { _, _ in HTTPResponse.Status.ok }
        }
        router.get("readyz") { _, _ -> EditedResponse<ReadinessBody> in
            switch await readiness() {
            case .ready:
                return EditedResponse(status: .ok, response: ReadinessBody(status: "ready"))
            case .unavailable:
                return EditedResponse(
                    status: .serviceUnavailable,
                    response: ReadinessBody(code: "database_unavailable", message: "the database does not answer"))
            case .readOnly:
                return EditedResponse(
                    status: .serviceUnavailable,
                    response: ReadinessBody(
                        code: "database_read_only",
                        message: "the database takes no writes (a standby, or a primary that was demoted)"))
            }
        }
        router.head("readyz") { _, _ in await readiness() == .ready ? HTTPResponse.Status.ok : .serviceUnavailable }
    }

    enum Readiness { case ready, unavailable, readOnly }

    /// Asks a pooled connection, within `probeTimeout`, whether its server takes writes now. A pooled
    /// connection may have been opened before a failover: asked each time, never remembered.
    private func readiness() async -> Readiness {
        do {
            let writable = try await withDeadline(probeTimeout) {
                try await client.query(
                    "SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off'"
                ).first?.decode(Bool.self, at: 0)
            }
            return writable == true ? .ready : .readOnly
        } catch {
            return .unavailable
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
