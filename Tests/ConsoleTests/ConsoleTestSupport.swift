import Console
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Postgres
import TestSupport

/// A clock the console's sessions and sign-in windows read, moved by the test.
final class ConsoleTestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current = Date(timeIntervalSince1970: 1_796_000_000)

    var now: Date { lock.withLock { current } }

    func advance(_ seconds: TimeInterval) { lock.withLock { current = current.addingTimeInterval(seconds) } }
}

/// Runs `body` against the console's router on a database of its own (`.router`: no socket), with an
/// injected clock and cheap password hashes.
func withConsole(
    _ label: String = #function,
    configure: (inout ConsoleConfiguration) -> Void = { _ in },
    _ body: @escaping @Sendable (any TestClientProtocol, TestDatabase, ConsoleTestClock) async throws -> Void
) async throws {
    var configuration = ConsoleConfiguration(port: 0, passwordCost: .testing)
    configure(&configuration)
    let clock = ConsoleTestClock()
    try await withTestDatabase(label) { db in
        let app = buildConsole(
            configuration: configuration, services: ConsoleServices(client: db.client, clock: { clock.now }),
            logger: Logger(label: "console-test"))
        try await app.test(.router) { client in try await body(client, db, clock) }
    }
}

/// One console answer: status, headers, body.
struct Page: Sendable {
    let status: HTTPResponse.Status
    let headers: HTTPFields
    let body: String

    var location: String? { headers[.location] }

    /// The value a `Set-Cookie` of this answer gives `name` (nil when none sets it).
    func cookie(_ name: String) -> String? {
        for value in headers[values: .setCookie] where value.hasPrefix(name + "=") {
            return String(value.dropFirst(name.count + 1).prefix { $0 != ";" })
        }
        return nil
    }

    /// The first hidden `csrf` field of the page.
    var csrf: String? { hiddenField("csrf") }

    func hiddenField(_ name: String) -> String? {
        guard let range = body.range(of: "name=\"\(name)\" value=\"") else { return nil }
        return String(body[range.upperBound...].prefix { $0 != "\"" })
    }
}

/// A browser's state against the `.router` client: its cookies and language.
struct Browser: Sendable {
    let client: any TestClientProtocol
    var cookies: [String: String] = [:]
    var language = "en"

    init(_ client: any TestClientProtocol) { self.client = client }

    mutating func get(_ uri: String) async throws -> Page {
        try await send(.get, uri, body: nil)
    }

    mutating func post(_ uri: String, _ fields: [(String, String)]) async throws -> Page {
        let body = fields.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&")
        return try await send(.post, uri, body: body)
    }

    mutating func send(_ method: HTTPRequest.Method, _ uri: String, body: String?) async throws -> Page {
        var headers: HTTPFields = [.acceptLanguage: language]
        if !cookies.isEmpty {
            headers[.cookie] = cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(
                separator: "; ")
        }
        if body != nil { headers[.contentType] = "application/x-www-form-urlencoded" }
        let page = try await client.execute(
            uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }
        ) { response in
            Page(status: response.status, headers: response.headers, body: String(buffer: response.body))
        }
        for value in page.headers[values: .setCookie] {
            let pair = value.prefix { $0 != ";" }
            guard let equals = pair.firstIndex(of: "=") else { continue }
            let name = String(pair[..<equals])
            let cookieValue = String(pair[pair.index(after: equals)...])
            if value.contains("Max-Age=0") || cookieValue.isEmpty {
                cookies[name] = nil
            } else {
                cookies[name] = cookieValue
            }
        }
        return page
    }

    /// Signs in through the form, as a browser does: GET /login, then POST it with its token.
    @discardableResult
    mutating func signIn(_ name: String, _ password: String) async throws -> Page {
        let form = try await get("/login")
        return try await post(
            "/login", [("form_token", form.hiddenField("form_token") ?? ""), ("name", name), ("password", password)])
    }

    static func encode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}

/// Adds an operator with the testing cost.
@discardableResult
func addOperator(
    _ db: TestDatabase, _ name: String, role: Operator.Role, password: String = "correct horse battery"
) async throws -> Operator {
    try await OperatorStore(client: db.client, cost: .testing).add(name: name, role: role, password: password)
}
