import HTTPTypes
import Hummingbird
import HummingbirdTesting
import TestSupport
import Testing

@testable import ShopServer

/// Every route the router holds, with who may call it. A route is added to a group whose middleware
/// decides that (Application+build.swift); this test lists the router's routes, asks each without
/// credentials how it answers, and fails when a route is not in the table below: adding a route means
/// deciding its access here.
@Suite("Route access")
struct RouteAccessTests {
    enum Access: String, CustomStringConvertible {
        /// Anyone.
        case `public`
        /// `/metrics`: its own bearer token when one is configured.
        case metricsToken
        /// A signed-in user, `idtoken` header, SeSAC answers.
        case sesacUser
        /// A signed-in user, `Authorization: Bearer`, JSON answers.
        case user
        /// The admin bearer token.
        case admin

        var description: String { rawValue }
    }

    static let expected: [String: Access] = [
        "GET /livez": .public,
        "HEAD /livez": .public,
        "GET /healthz": .public,
        "HEAD /healthz": .public,
        "GET /readyz": .public,
        "HEAD /readyz": .public,
        "GET /metrics": .metricsToken,
        "GET /openapi.yaml": .public,
        "GET /api/v1/catalog": .public,
        "POST /api/v1/notifications/app-store": .public,
        // The Pub/Sub push token is checked by the route itself (PubSubPushVerifier), not by a group.
        "POST /api/v1/notifications/google-play": .public,
        "POST /v1/user": .sesacUser,
        "GET /v1/user": .sesacUser,
        "GET /v1/user/shop/myinfo": .sesacUser,
        "POST /v1/user/shop/item": .sesacUser,
        "POST /v1/user/shop/ios": .sesacUser,
        "POST /api/v1/me": .user,
        "GET /api/v1/me": .user,
        "PUT /api/v1/me/equipped": .user,
        "POST /api/v1/purchases": .user,
        "POST /api/v1/purchases/restore": .user,
        "GET /api/v1/admin/users/{uid}": .admin,
        "GET /api/v1/admin/users/{uid}/history": .admin,
        "GET /api/v1/admin/reconciliation": .admin,
        "POST /api/v1/admin/grants": .admin,
        "POST /api/v1/admin/grants/{actionId}/revoke": .admin,
        "GET /api/v1/admin/purchases/{transactionId}": .admin,
        "GET /api/v1/admin/webhooks": .admin,
        "POST /api/v1/admin/webhooks": .admin,
        "POST /api/v1/admin/webhooks/{endpointId}/disable": .admin,
        "POST /api/v1/admin/webhooks/replay": .admin,
        "GET /api/v1/admin/webhooks/events/{eventId}": .admin,
        "GET /api/v1/admin/catalog": .admin,
        "POST /api/v1/admin/catalog": .admin,
        "POST /api/v1/admin/catalog/{kind}/{index}/rename": .admin,
        "POST /api/v1/admin/catalog/{kind}/{index}/retire": .admin,
        "POST /api/v1/admin/catalog/{kind}/{index}/google-product": .admin,
    ]

    @Test("every registered route has its access decided, and answers a request without credentials by it")
    func everyRouteHasItsAccess() async throws {
        var configuration = ServerTest.configuration()
        configuration.metricsToken = "metrics-token-for-tests-0123456789"
        try await withTestDatabase { db in
            let (app, routes) = try shopApplication(
                configuration: configuration, client: db.client, logger: ServerTest.quietLogger, prover: nil,
                metrics: ShopMetrics())
            let registered = Set(routes.map { "\($0.method.rawValue) \($0.path.description)" })
            #expect(
                registered == Set(Self.expected.keys),
                "routes without an access decision: \(registered.subtracting(Self.expected.keys).sorted()); decided but gone: \(Set(Self.expected.keys).subtracting(registered).sorted())"
            )
            // Each route as its name in the table and a URI that reaches it (a parameter becomes `probe`).
            let probes = routes.map { route in
                (
                    method: route.method, name: "\(route.method.rawValue) \(route.path.description)",
                    uri: "/"
                        + route.path.map { $0.description.hasPrefix("{") ? "probe" : $0.description }
                        .joined(separator: "/")
                )
            }
            try await app.test(.router) { client in
                for (method, name, uri) in probes {
                    let anonymous = try await client.send(method, uri)
                    #expect(
                        Self.access(of: uri, anonymous) == Self.expected[name],
                        "\(name): \(anonymous.status) \(anonymous.body)")
                    if Self.expected[name] == .user || Self.expected[name] == .sesacUser {
                        // A signed-in user gets past the group (whatever the route then says of the empty body).
                        let user =
                            Self.expected[name] == .user
                            ? try await client.api(method, uri, uid: "route-access-user")
                            : try await client.sesac(method, uri, uid: "route-access-user")
                        #expect(user.status != .unauthorized, "\(name) as a user: \(user.status) \(user.body)")
                    }
                    if Self.expected[name] == .admin {
                        // A signed-in user is no admin.
                        let user = try await client.api(method, uri, uid: "route-access-user")
                        #expect(
                            user.status == .unauthorized && user.errorCode == "admin_required",
                            "\(name) as a user: \(user.status)")
                    }
                }
            }
        }
    }

    /// The access a route's answer to a request without credentials shows.
    static func access(of uri: String, _ answer: Answer) -> Access {
        guard answer.status == .unauthorized else { return .public }
        if uri == "/metrics" { return .metricsToken }
        if uri.hasPrefix("/v1/") {
            return answer.body.contains("Firebase token error: missing_token") ? .sesacUser : .public
        }
        switch answer.errorCode {
        case "missing_token": return .user
        case "admin_required": return .admin
        default: return .public
        }
    }
}
