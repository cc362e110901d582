import AsyncHTTPClient
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1
import Receipts
import Synchronization
import TestSupport

/// A fake App Store Server API on 127.0.0.1: a real HTTP server that checks every request's bearer
/// token (ES256 signature with the test key and every claim), serves transactions, histories, refunds,
/// orders and notifications signed by a ``TestPKI``, and answers scripted faults (401, 404, 429 with
/// `Retry-After`, 500, a hang, a forged payload), to any request or to those of one environment,
/// endpoint or page (``script(_:times:for:)``).
///
/// Production is served under `/production`, the sandbox under `/sandbox`. Get Notification History
/// answers as Apple documents it: each item is `{signedPayload, sendAttempts: [{attemptDate,
/// sendAttemptResult}]}`, and a `startDate` older than the environment's history (180 days in
/// production, 30 in the sandbox) is refused with 400 and errorCode 4000012.
final class FakeAppStore: Sendable {
    struct Transaction: Sendable {
        var id: String
        var productId: String
        /// Who bought it: history and refund history answer with one customer's transactions.
        var customer: String
        var environment: StoreEnvironment = .production
        var purchaseMs: Int64 = 1_763_000_000_000
        var price: Int = 2_500_000
        var type = "Non-Consumable"
        var revocationMs: Int64?
        var ownership = "PURCHASED"
        var appAccountToken: String?
    }

    struct Notification: Sendable {
        var uuid: String
        var type: String
        var signedDateMs: Int64
        var transactionId: String?
        var environment: StoreEnvironment = .production
        /// The results of Apple's attempts to send it to the app's endpoint, first attempt first (at most
        /// six: the first and five retries); dated on Apple's retry schedule from `signedDateMs`.
        var attempts = ["TIMED_OUT"]
    }

    enum Fault: Sendable {
        /// Answer this status with `{errorCode, errorMessage}` (no body when the code is nil).
        case status(Int, errorCode: Int?)
        /// 429 with `Retry-After` this many milliseconds from now, as a UNIX time in milliseconds.
        case rateLimited(retryAfterMs: Int64)
        /// 429 with `Retry-After` at this time, as a UNIX time in milliseconds (a test on a clock of its
        /// own says when).
        case rateLimitedUntil(Date)
        /// Wait this long before answering normally (longer than the client's timeout), or until the test
        /// that runs the fake has ended, whichever is first.
        case hang(Duration)
        /// Answer normally but sign every payload with a key that is not the PKI's leaf key.
        case forgedSignature
    }

    /// The requests a targeted fault answers: every condition given must hold.
    struct Target: Sendable {
        var environment: StoreEnvironment?
        /// The request's path (after the environment) starts with this.
        var path: String?
        /// The page of a paginated endpoint, from 1 (the first page has no `paginationToken` or `revision`).
        var page: Int?

        static let notificationHistoryPath = "/inApps/v1/notifications/history"

        static func notificationHistory(in environment: StoreEnvironment? = nil, page: Int? = nil) -> Target {
            Target(environment: environment, path: notificationHistoryPath, page: page)
        }
    }

    struct Request: Sendable {
        var method: String
        var path: String
        var environment: String
        var at: ContinuousClock.Instant
        var tokenProblem: String?
        /// Get Notification History's `startDate` (UNIX ms), for that endpoint.
        var startDateMs: Int64? = nil
    }

    /// A fault for the next `remaining` requests its target selects.
    private struct TargetedFault {
        var fault: Fault
        var target: Target
        var remaining: Int
    }

    private struct State {
        var transactions: [String: Transaction] = [:]
        var orders: [String: [String]] = [:]
        var notifications: [Notification] = []
        var testNotifications: [String: Notification] = [:]
        /// Delivery results of test notifications, by token (`SUCCESS`, ...).
        var testDeliveries: [String: String] = [:]
        var deliveryURL: String?
        var latestTestToken: String?
        var faults: [Fault] = []
        var targetedFaults: [TargetedFault] = []
        var requests: [Request] = []
        var tokens: Set<String> = []
        /// The test has ended: hanging answers stop waiting, so the server can stop.
        var hangsReleased = false
    }

    let pki: TestPKI
    let bundleId: String
    let keyId = "FAKEKEY123"
    let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    /// The in-app purchase key the client signs with; the fake checks tokens with its public key.
    let apiKey = P256.Signing.PrivateKey()
    let pageSize: Int
    private let state = Mutex(State())

    init(pki: TestPKI, bundleId: String, pageSize: Int = 2) {
        self.pki = pki
        self.bundleId = bundleId
        self.pageSize = pageSize
    }

    // MARK: Scripting

    func add(_ transaction: Transaction) { state.withLock { $0.transactions[transaction.id] = transaction } }
    func refund(_ transactionId: String, atMs: Int64) {
        state.withLock { $0.transactions[transactionId]?.revocationMs = atMs }
    }
    func addOrder(_ orderId: String, transactions: [String]) { state.withLock { $0.orders[orderId] = transactions } }
    func add(_ notification: Notification) { state.withLock { $0.notifications.append(notification) } }
    /// Where test notifications are POSTed (`{"signedPayload"}`), as Apple posts to the app's URL; when
    /// nil they are reported delivered without being sent.
    func deliverTestNotifications(to url: String) { state.withLock { $0.deliveryURL = url } }
    func script(_ faults: Fault...) { state.withLock { $0.faults += faults } }
    /// Answers `fault` to the next `times` requests `target` selects (before the faults of ``script(_:)``,
    /// which every request takes in turn). The client retries 5xx, 429 and no answer, so a lasting
    /// failure of those is as many times as its attempts.
    func script(_ fault: Fault, times: Int = 1, for target: Target) {
        state.withLock { $0.targetedFaults.append(TargetedFault(fault: fault, target: target, remaining: times)) }
    }
    /// Drops the scripted faults no request has taken yet.
    func clearFaults() {
        state.withLock {
            $0.faults = []
            $0.targetedFaults = []
        }
    }
    var requests: [Request] { state.withLock { $0.requests } }
    /// Distinct bearer tokens seen (the client reuses its token).
    var distinctTokens: Int { state.withLock { $0.tokens.count } }
    func resetRequests() { state.withLock { $0.requests = [] } }

    /// Waits (on the wall clock, at most `within`: a bound for a broken test) until `count` requests have
    /// come. Returns false when they did not.
    func waitForRequests(_ count: Int, within: Duration = .seconds(30)) async -> Bool {
        let deadline = ContinuousClock.now + within
        while requests.count < count {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }

    // MARK: Serving

    /// Runs the fake on a free loopback port for the duration of `body`, which gets the base URLs.
    func run<R: Sendable>(
        _ body: @escaping @Sendable (_ production: String, _ sandbox: String) async throws -> R
    ) async throws -> R {
        let router = Router()
        router.on("/:env/**", method: .get) { request, context in try await self.answer(request, context: context) }
        router.on("/:env/**", method: .post) { request, context in try await self.answer(request, context: context) }
        var logger = Logger(label: "fake-app-store")
        logger.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), logger: logger)
        // On a thread of its own, with the test that calls it: see `OwnThreadExecutor`.
        return try await withTaskExecutorPreference(OwnThreadExecutor(label: "fake-app-store")) {
            try await app.test(.live) { client in
                let base = "http://127.0.0.1:\(client.port!)"
                defer { self.state.withLock { $0.hangsReleased = true } }
                return try await body(base + "/production", base + "/sandbox")
            }
        }
    }

    /// 429 with `Retry-After` at `ms`, a UNIX time in milliseconds, as Apple sends it.
    private static func rateLimited(until ms: Int64) -> Response {
        var response = json(429, ["errorCode": 4_290_000, "errorMessage": "Rate limit exceeded."])
        response.headers[HTTPField.Name("Retry-After")!] = "\(ms)"
        return response
    }

    private func answer(_ request: Hummingbird.Request, context: BasicRequestContext) async throws -> Response {
        let environmentName = context.parameters.get("env") ?? ""
        let environment: StoreEnvironment = environmentName == "sandbox" ? .sandbox : .production
        let path = String(request.uri.path.dropFirst(environmentName.count + 1))
        let authorization = request.headers[.authorization] ?? ""
        let problem = checkToken(authorization)
        let body = Data(try await request.body.collect(upTo: 64 * 1024).readableBytesView)
        let query = request.uri.queryParameters
        let token = query["paginationToken"] ?? query["revision"]
        let page = (token.flatMap { $0.split(separator: "-").last.flatMap { Int($0) } } ?? 0) / pageSize + 1
        let fault: Fault? = state.withLock { state in
            state.requests.append(
                Request(
                    method: request.method.rawValue, path: path, environment: environmentName,
                    at: ContinuousClock.now, tokenProblem: problem,
                    startDateMs: (try? JSONSerialization.jsonObject(with: body) as? [String: Any])
                        .flatMap { Self.int64($0["startDate"]) }))
            state.tokens.insert(authorization)
            if let index = state.targetedFaults.firstIndex(where: {
                $0.remaining > 0 && ($0.target.environment ?? environment) == environment
                    && path.hasPrefix($0.target.path ?? "") && ($0.target.page ?? page) == page
            }) {
                state.targetedFaults[index].remaining -= 1
                return state.targetedFaults[index].fault
            }
            return state.faults.isEmpty ? nil : state.faults.removeFirst()
        }
        if let problem {
            return Self.json(401, ["errorCode": 4_010_000, "errorMessage": "unauthorized: \(problem)"])
        }
        var forged = false
        switch fault {
        case .status(let status, let code)?:
            return code.map { Self.json(status, ["errorCode": $0, "errorMessage": "scripted"]) }
                ?? Response(status: .init(code: status))
        case .rateLimited(let afterMs)?:
            return Self.rateLimited(until: Int64(Date().timeIntervalSince1970 * 1000) + afterMs)
        case .rateLimitedUntil(let date)?:
            return Self.rateLimited(until: Int64((date.timeIntervalSince1970 * 1000).rounded()))
        case .hang(let duration)?:
            let end = ContinuousClock.now + duration
            while ContinuousClock.now < end, !state.withLock({ $0.hangsReleased }) {
                try? await Task.sleep(for: .milliseconds(50))
            }
        case .forgedSignature?:
            forged = true
        case nil:
            break
        }
        let response = route(
            method: request.method, path: path, query: query, body: body, environment: environment, forged: forged)
        if request.method == .post, path == "/inApps/v1/notifications/test" {
            await deliverLatestTestNotification()
        }
        return response
    }

    /// Sends the test notification just requested to the delivery URL, as Apple would, and records how
    /// that went for the status endpoint.
    private func deliverLatestTestNotification() async {
        let (url, pending) = state.withLock { state in
            (
                state.deliveryURL,
                state.latestTestToken.flatMap { token in state.testNotifications[token].map { (token, $0) } }
            )
        }
        guard let url, let pending else { return }
        let (token, notification) = pending
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        let body = try! JSONSerialization.data(withJSONObject: [
            "signedPayload": pki.sign(notificationPayload(notification))
        ])
        request.body = .bytes(ByteBuffer(bytes: body))
        var result = "NO_RESPONSE"
        if let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(5)) {
            result = response.status.code == 200 ? "SUCCESS" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
            _ = try? await response.body.collect(upTo: 64 * 1024)
        }
        state.withLock { $0.testDeliveries[token] = result }
    }

    private func route(
        method: HTTPRequest.Method, path: String, query: Hummingbird.Parameters, body: Data,
        environment: StoreEnvironment, forged: Bool
    ) -> Response {
        let parts = path.split(separator: "/").map(String.init)
        let signer: ([String: Any]) -> String = { payload in
            forged ? self.pki.sign(payload, signingKey: P256.Signing.PrivateKey()) : self.pki.sign(payload)
        }
        switch (method, parts.count, parts.dropLast().joined(separator: "/")) {
        case (.get, 4, "inApps/v1/transactions"):
            guard let transaction = lookUp(parts[3], in: environment) else { return Self.notFound }
            return Self.json(200, ["signedTransactionInfo": signer(payload(transaction))])
        case (.get, 4, "inApps/v2/history"), (.get, 5, "inApps/v2/refund/lookup"):
            guard let anchor = lookUp(parts.last!, in: environment) else { return Self.notFound }
            let refundsOnly = parts[1] == "v2" && parts[2] == "refund"
            var mine = state.withLock { state in
                state.transactions.values.filter { $0.customer == anchor.customer && $0.environment == environment }
            }
            if refundsOnly { mine = mine.filter { $0.revocationMs != nil } }
            mine.sort { ($0.purchaseMs, $0.id) < ($1.purchaseMs, $1.id) }
            let offset = query["revision"].flatMap { Int($0.dropFirst("rev-".count)) } ?? 0
            let page = Array(mine.dropFirst(offset).prefix(pageSize))
            let next = offset + page.count
            return Self.json(
                200,
                [
                    "signedTransactions": page.map { signer(payload($0)) }, "revision": "rev-\(next)",
                    "hasMore": next < mine.count, "bundleId": bundleId, "environment": environment.rawValue,
                ])
        case (.get, 4, "inApps/v1/lookup"):
            let ids = state.withLock { $0.orders[parts[3]] }
            guard let ids else { return Self.json(200, ["status": 1, "signedTransactions": [String]()]) }
            let found = ids.compactMap { lookUp($0, in: environment) }
            guard !found.isEmpty else { return Self.json(200, ["status": 1, "signedTransactions": [String]()]) }
            return Self.json(200, ["status": 0, "signedTransactions": found.map { signer(payload($0)) }])
        case (.post, 4, "inApps/v1/notifications") where parts[3] == "history":
            guard let request = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
                let start = Self.int64(request["startDate"]), let end = Self.int64(request["endDate"])
            else { return Self.json(400, ["errorCode": 4_000_000, "errorMessage": "bad request body"]) }
            let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
            guard start >= nowMs - Self.notificationHistoryDays(environment) * 86_400_000 else {
                return Self.json(
                    400,
                    [
                        "errorCode": 4_000_012,
                        "errorMessage": "Invalid request. The start date is earlier than the earliest allowed date.",
                    ])
            }
            let matching = state.withLock { state in
                state.notifications.filter {
                    $0.environment == environment && (start..<end).contains($0.signedDateMs)
                }.sorted { $0.signedDateMs < $1.signedDateMs }
            }
            let offset = query["paginationToken"].flatMap { Int($0.dropFirst("page-".count)) } ?? 0
            let page = Array(matching.dropFirst(offset).prefix(pageSize))
            let next = offset + page.count
            var answer: [String: Any] = [
                "notificationHistory": page.map {
                    ["signedPayload": signer(notificationPayload($0)), "sendAttempts": Self.sendAttempts($0)]
                },
                "hasMore": next < matching.count,
            ]
            if next < matching.count { answer["paginationToken"] = "page-\(next)" }
            return Self.json(200, answer)
        case (.post, 4, "inApps/v1/notifications") where parts[3] == "test":
            let token = "test-\(UUID().uuidString.lowercased())"
            let notification = Notification(
                uuid: UUID().uuidString.lowercased(), type: "TEST",
                signedDateMs: Int64(Date().timeIntervalSince1970 * 1000), environment: environment)
            state.withLock {
                $0.testNotifications[token] = notification
                $0.latestTestToken = token
            }
            return Self.json(200, ["testNotificationToken": token])
        case (.get, 5, "inApps/v1/notifications/test"):
            guard let notification = state.withLock({ $0.testNotifications[parts[4]] }) else {
                return Self.json(404, ["errorCode": 4_040_008, "errorMessage": "Test notification not found."])
            }
            return Self.json(
                200,
                [
                    "signedPayload": signer(notificationPayload(notification)),
                    "sendAttempts": [
                        [
                            "attemptDate": notification.signedDateMs + 500,
                            "sendAttemptResult": state.withLock { $0.testDeliveries[parts[4]] } ?? "SUCCESS",
                        ]
                    ],
                ])
        default:
            return Self.json(404, ["errorCode": 4_040_000, "errorMessage": "no such endpoint \(path)"])
        }
    }

    /// How many days of notification history Apple keeps: 180 in production, 30 in the sandbox.
    static func notificationHistoryDays(_ environment: StoreEnvironment) -> Int64 {
        environment == .production ? 180 : 30
    }

    /// Apple's retries come 1, 12, 24, 48 and 72 hours after the attempt before.
    static let retryDelaysMs: [Int64] = [0, 1, 12, 24, 48, 72].map { $0 * 3_600_000 }

    /// A history item's `sendAttempts`: one `sendAttemptItem` per attempt, dated on Apple's schedule.
    static func sendAttempts(_ notification: Notification) -> [[String: Any]] {
        var date = notification.signedDateMs + 500
        return zip(notification.attempts, retryDelaysMs).map { result, delay in
            date += delay
            return ["attemptDate": date, "sendAttemptResult": result]
        }
    }

    private func lookUp(_ id: String, in environment: StoreEnvironment) -> Transaction? {
        state.withLock { $0.transactions[id] }.flatMap { $0.environment == environment ? $0 : nil }
    }

    func payload(_ transaction: Transaction) -> [String: Any] {
        var payload: [String: Any] = [
            "transactionId": transaction.id, "originalTransactionId": transaction.id, "bundleId": bundleId,
            "productId": transaction.productId, "type": transaction.type, "purchaseDate": transaction.purchaseMs,
            "originalPurchaseDate": transaction.purchaseMs, "signedDate": Int64(Date().timeIntervalSince1970 * 1000),
            "environment": transaction.environment.rawValue, "price": transaction.price, "currency": "KRW",
            "storefront": "KOR", "inAppOwnershipType": transaction.ownership,
        ]
        if let token = transaction.appAccountToken { payload["appAccountToken"] = token }
        if let revocation = transaction.revocationMs {
            payload["revocationDate"] = revocation
            payload["revocationReason"] = 0
            payload["revocationType"] = "REFUND_FULL"
        }
        return payload
    }

    /// A transaction of the fake's as StoreKit 2 hands it to the app, signed: what a device sends as proof.
    func signedTransaction(_ id: String) -> String {
        pki.sign(payload(state.withLock { $0.transactions[id] }!))
    }

    /// A notification signed as Apple sends it live (the same UUID as one in the history, if given so).
    func signedNotification(uuid: String, type: String, signedDateMs: Int64, transactionId: String) -> String {
        pki.sign(
            notificationPayload(
                Notification(uuid: uuid, type: type, signedDateMs: signedDateMs, transactionId: transactionId)))
    }

    private func notificationPayload(_ notification: Notification) -> [String: Any] {
        var data: [String: Any] = [
            "environment": notification.environment.rawValue, "appAppleId": 41_234, "bundleId": bundleId,
            "bundleVersion": "1.0",
        ]
        if let id = notification.transactionId, let transaction = state.withLock({ $0.transactions[id] }) {
            data["signedTransactionInfo"] = pki.sign(payload(transaction))
        }
        return [
            "notificationType": notification.type, "notificationUUID": notification.uuid, "version": "2.0",
            "signedDate": notification.signedDateMs, "data": data,
        ]
    }

    // MARK: Bearer tokens

    /// Why `authorization` is not a token the real Apple would take, or nil when it is.
    func checkToken(_ authorization: String) -> String? {
        guard authorization.hasPrefix("Bearer ") else { return "no bearer token" }
        let parts = authorization.dropFirst("Bearer ".count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Self.base64URLDecode(parts[0]),
            let claimsData = Self.base64URLDecode(parts[1]), let signatureData = Self.base64URLDecode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsData) as? [String: Any]
        else { return "not a JWT" }
        guard header["alg"] as? String == "ES256" else { return "alg is not ES256" }
        guard header["kid"] as? String == keyId else { return "wrong kid" }
        guard header["typ"] as? String == "JWT" else { return "typ is not JWT" }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            apiKey.publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8))
        else { return "signature does not verify with the key" }
        guard claims["iss"] as? String == issuerId else { return "wrong iss" }
        guard claims["aud"] as? String == "appstoreconnect-v1" else { return "wrong aud" }
        guard claims["bid"] as? String == bundleId else { return "wrong bid" }
        guard let iat = Self.int64(claims["iat"]), let exp = Self.int64(claims["exp"])
        else { return "iat or exp missing" }
        let now = Int64(Date().timeIntervalSince1970)
        guard iat <= now + 60, iat >= now - 3600 else { return "iat is not now" }
        guard exp > now, exp > iat, exp - iat <= 3600 else { return "exp expired or more than 60 minutes after iat" }
        return nil
    }

    /// A JSON number as JSONSerialization hands it over on either platform.
    static func int64(_ value: Any?) -> Int64? {
        switch value {
        case let value as Int: Int64(value)
        case let value as Int64: value
        case let value as NSNumber: value.int64Value
        default: nil
        }
    }

    static func base64URLDecode(_ segment: Substring) -> Data? {
        var text = segment.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return Data(base64Encoded: text)
    }

    static let notFound = json(404, ["errorCode": 4_040_010, "errorMessage": "Transaction id not found."])

    static func json(_ status: Int, _ object: [String: Any]) -> Response {
        let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return Response(
            status: .init(code: status), headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
