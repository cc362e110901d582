import Console
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import TestSupport
import Testing

/// Every console route is signed-in only, but the sign-in pages themselves: this test lists the router's
/// routes and asks each without a session (sent to sign in), then each page as each role (the sections'
/// roles: /money finance, /shop admin, the rest support). A route added in the wrong group fails here.
@Suite struct ConsoleRouteAccessTests {
    static let publicRoutes: Set<String> = ["GET /assets/console.css", "GET /language", "GET /login", "POST /login"]

    static func minimumRole(of path: String) -> Operator.Role {
        if path.hasPrefix("/money") { return .finance }
        if path.hasPrefix("/shop") { return .admin }
        return .support
    }

    @Test func everyRouteButSignInNeedsASessionAndItsRole() async throws {
        try await withTestDatabase { db in
            let router = buildConsoleRouter(
                configuration: ConsoleConfiguration(port: 0, passwordCost: .testing),
                services: ConsoleServices(client: db.client), logger: Logger(label: "console-test"))
            let probes = router.routes.map { route in
                (
                    method: route.method, name: "\(route.method.rawValue) \(route.path.description)",
                    uri: "/"
                        + route.path.map { $0.description.hasPrefix("{") ? "probe" : $0.description }
                        .joined(separator: "/")
                )
            }
            #expect(probes.count >= 10, "\(probes.map(\.name))")
            #expect(Self.publicRoutes.isSubset(of: Set(probes.map(\.name))))
            for role in Operator.Role.allCases {
                try await addOperator(db, "op-\(role.rawValue)", role: role)
            }
            let app = Application(router: router, services: [db.client])
            try await app.test(.router) { client in
                for probe in probes where !Self.publicRoutes.contains(probe.name) {
                    var anonymous = Browser(client)
                    let page = try await anonymous.send(probe.method, probe.uri, body: probe.method == .post ? "" : nil)
                    #expect(page.status == .seeOther, "\(probe.name): \(page.status)")
                    #expect(page.location?.hasPrefix("/login") == true, "\(probe.name): \(page.location ?? "")")
                }
                for role in Operator.Role.allCases {
                    var browser = Browser(client)
                    try await browser.signIn("op-\(role.rawValue)", "correct horse battery")
                    for probe in probes where probe.method == .get && !Self.publicRoutes.contains(probe.name) {
                        let page = try await browser.get(probe.uri)
                        let allowed = role >= Self.minimumRole(of: probe.uri)
                        if allowed {
                            #expect(page.status != .forbidden, "\(role) on \(probe.name): \(page.status)")
                        } else {
                            #expect(page.status == .forbidden, "\(role) on \(probe.name): \(page.status)")
                        }
                    }
                }
            }
        }
    }
}
