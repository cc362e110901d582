import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization
import _CryptoExtras

/// A fake Google on 127.0.0.1 for the Google Play tests: a real HTTP server with
///
/// - the OAuth token endpoint (`POST /token`), which checks the JWT bearer assertion's RS256 signature
///   with the test service account's public key and its claims (`iss`, `scope`, `aud`, `exp`), and issues
///   access tokens the API then requires;
/// - the Developer API's `purchases.products` get, `:acknowledge` and `:consume`, and
///   `purchases.voidedpurchases.list` with `tokenPagination`, and the Orders API's `orders.get` and
///   `orders.batchget` (an order for each purchase given a ``Purchase/charged`` amount), as androidpublisher
///   v3 documents them;
/// - errors in Google's shape, `{"error": {"code", "message", "status", "errors": [...]}}`, and scripted
///   faults (a status, a 429 with `Retry-After`, a hang);
/// - a signer of Pub/Sub push tokens (Google-signed OIDC JWTs) with a test key whose certificate file
///   (``certificatesJSON``, Google's `oauth2/v1/certs` shape) the server under test is told to trust.
public final class FakeGooglePlay: Sendable {
    public struct Purchase: Sendable {
        public var productId: String
        public var token: String
        public var orderId: String?
        /// 0 purchased, 1 cancelled, 2 pending.
        public var state: Int
        /// nil a real purchase, 0 a test purchase.
        public var purchaseType: Int?
        public var accountId: String?
        public var purchaseTimeMillis: Int64
        public var regionCode: String
        public var acknowledged = false
        public var consumed = false
        /// What the order charged the buyer (its line's and its own `total`); nil: Google has no order for it
        /// (`orders.get` answers 404 NOT_FOUND).
        public var charged: Money?
        /// The order's `state`; nil: as the purchase's state says (PROCESSED, CANCELED or PENDING, REFUNDED
        /// once voided).
        public var orderState: String?
        /// The order's line's product id, when another than the purchase's (a test of a mismatch).
        public var orderProductId: String?

        public init(
            productId: String, token: String, orderId: String?, state: Int = 0, purchaseType: Int? = nil,
            accountId: String? = nil, purchaseTimeMillis: Int64 = 1_763_000_000_000, regionCode: String = "KR",
            charged: Money? = nil
        ) {
            self.productId = productId
            self.token = token
            self.orderId = orderId
            self.state = state
            self.purchaseType = purchaseType
            self.accountId = accountId
            self.purchaseTimeMillis = purchaseTimeMillis
            self.regionCode = regionCode
            self.charged = charged
        }
    }

    /// `google.type.Money`: whole `units` and `nanos` (10⁻⁹) of `currencyCode`.
    public struct Money: Sendable {
        public var currencyCode: String
        public var units: Int64
        public var nanos: Int32
        public init(_ currencyCode: String, units: Int64, nanos: Int32 = 0) {
            self.currencyCode = currencyCode
            self.units = units
            self.nanos = nanos
        }
        var json: [String: Any] {
            var object: [String: Any] = ["currencyCode": currencyCode, "units": String(units)]
            if nanos != 0 { object["nanos"] = nanos }
            return object
        }
    }

    public enum Fault: Sendable {
        /// Answer `code` with Google's error body of `status` (`UNAVAILABLE`, `NOT_FOUND`, ...).
        case status(Int, status: String)
        /// 429 `RESOURCE_EXHAUSTED` with `Retry-After: seconds`.
        case rateLimited(retryAfterSeconds: Int)
        /// Wait this long before answering normally, or until the fake stops.
        case hang(Duration)
    }

    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var query: String
    }

    private struct State {
        var purchases: [String: Purchase] = [:]
        var voided: [VoidedEntry] = []
        var faults: [Fault] = []
        var orderFaults: [Fault] = []
        var requests: [Request] = []
        var accessTokens: Set<String> = []
        var tokenRequests = 0
        var assertionProblems: [String] = []
        var stopped = false
        var acknowledgementsFail = false
    }

    private struct VoidedEntry {
        var token: String
        var orderId: String?
        var voidedTimeMillis: Int64
        var reason: Int
    }

    public let packageName: String
    public let serviceAccountEmail = "shopledger@sesac-shop-test.iam.gserviceaccount.com"
    public let serviceAccountKey: _RSA.Signing.PrivateKey
    public let serviceAccountKeyId = "fake-service-account-key"
    /// The key Pub/Sub "signs" push tokens with, and its certificate's kid.
    public let pushSigner: TestSigningKey
    public let pushKeyId = "fake-pubsub-key"
    /// The service account Pub/Sub's push subscription authenticates as (the token's `email`).
    public let pushServiceAccount = "pubsub-push@sesac-shop-test.iam.gserviceaccount.com"
    public let pageSize: Int
    private let state = Mutex(State())

    /// RSA key generation is slow in a debug build: one set per test process.
    public static let sharedServiceAccountKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    public static let sharedPushSigner = try! TestSigningKey(
        commonName: "pubsub", notValidBefore: Date() - 86_400, notValidAfter: Date() + 30 * 86_400)

    public init(packageName: String = "com.memolease.sesac1", pageSize: Int = 2) {
        self.packageName = packageName
        self.pageSize = pageSize
        serviceAccountKey = Self.sharedServiceAccountKey
        pushSigner = Self.sharedPushSigner
    }

    // MARK: Scripting

    public func add(_ purchase: Purchase) { state.withLock { $0.purchases[purchase.token] = purchase } }

    public func update(_ token: String, _ change: @Sendable (inout Purchase) -> Void) {
        state.withLock { state in
            if var purchase = state.purchases[token] {
                change(&purchase)
                state.purchases[token] = purchase
            }
        }
    }

    public func purchase(_ token: String) -> Purchase? { state.withLock { $0.purchases[token] } }

    /// Google voids the purchase `token` (a refund: reason 0 other, 7 chargeback, ...).
    public func void(_ token: String, atMillis: Int64 = Int64(Date().timeIntervalSince1970 * 1000), reason: Int = 0) {
        state.withLock { state in
            state.voided.append(
                VoidedEntry(
                    token: token, orderId: state.purchases[token]?.orderId, voidedTimeMillis: atMillis, reason: reason))
        }
    }

    public func script(_ fault: Fault, times: Int = 1) {
        state.withLock { $0.faults += Array(repeating: fault, count: times) }
    }

    /// Faults for the Orders API's calls only (taken before ``script(_:times:)``'s, by those calls alone).
    public func scriptOrders(_ fault: Fault, times: Int = 1) {
        state.withLock { $0.orderFaults += Array(repeating: fault, count: times) }
    }

    /// Every acknowledgement is answered 503 `UNAVAILABLE` while `fail` holds.
    public func failAcknowledgements(_ fail: Bool) { state.withLock { $0.acknowledgementsFail = fail } }

    public var requests: [Request] { state.withLock { $0.requests } }
    public var tokenRequests: Int { state.withLock { $0.tokenRequests } }
    public var assertionProblems: [String] { state.withLock { $0.assertionProblems } }

    // MARK: Credentials

    /// The service account key file, as Google Cloud's console downloads it, its `token_uri` the fake's.
    public func keyFileJSON(tokenURI: String, key: _RSA.Signing.PrivateKey? = nil) -> Data {
        let object: [String: String] = [
            "type": "service_account", "project_id": "sesac-shop-test",
            "private_key_id": serviceAccountKeyId, "private_key": (key ?? serviceAccountKey).pemRepresentation,
            "client_email": serviceAccountEmail, "client_id": "1234567890",
            "token_uri": tokenURI,
        ]
        return try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }

    /// The push key's certificate as Google serves its OAuth certificates (`oauth2/v1/certs`): `{kid: PEM}`.
    public var certificatesJSON: Data {
        try! JSONSerialization.data(withJSONObject: [pushKeyId: pushSigner.certificatePEM])
    }

    /// A Pub/Sub push token: an OIDC ID token Google signs for a push subscription with authentication.
    public func pushToken(
        audience: String, email: String? = nil, issuer: String = "https://accounts.google.com",
        emailVerified: Bool = true, expiresIn: TimeInterval = 3600, signer: TestSigningKey? = nil, kid: String? = nil
    ) throws -> String {
        let now = Int(Date().timeIntervalSince1970)
        let claims: [String: Any] = [
            "aud": audience, "azp": "111111111111111111111", "email": email ?? pushServiceAccount,
            "email_verified": emailVerified, "exp": now + Int(expiresIn), "iat": now - 5, "iss": issuer,
            "sub": "111111111111111111111",
        ]
        return try TestTokens(signer: signer ?? pushSigner, kid: kid ?? pushKeyId, claims: claims).token()
    }

    /// The body Pub/Sub pushes for a developer notification (`notification` is its JSON object).
    public static func pushBody(
        _ notification: [String: Any], messageId: String = UUID().uuidString,
        subscription: String = "projects/sesac-shop-test/subscriptions/play-rtdn"
    ) -> [String: Any] {
        let data = try! JSONSerialization.data(withJSONObject: notification, options: [.sortedKeys])
        return [
            "message": [
                "data": data.base64EncodedString(), "messageId": messageId, "message_id": messageId,
                "publishTime": "2026-11-29T17:00:00.000Z", "attributes": [String: String](),
            ] as [String: Any],
            "subscription": subscription,
        ]
    }

    // MARK: Serving

    /// Runs the fake on a free loopback port for the duration of `body`, which gets its base URL (the
    /// token endpoint is `<base>/token`, the Developer API's root `<base>`, the push certificates
    /// `<base>/oauth2/v1/certs`).
    public func run<R: Sendable>(_ body: @Sendable (_ baseURL: String) async throws -> R) async throws -> R {
        let router = Router()
        router.post("/token") { request, _ in try await self.token(request) }
        // Google's OAuth certificates (`oauth2/v1/certs`), with the max-age Google sends.
        router.get("/oauth2/v1/certs") { _, _ in
            var response = Self.json(200, [self.pushKeyId: self.pushSigner.certificatePEM])
            response.headers[.cacheControl] = "public, max-age=20000, must-revalidate, no-transform"
            return response
        }
        router.on("/androidpublisher/**", method: .get) { request, _ in try await self.api(request) }
        router.on("/androidpublisher/**", method: .post) { request, _ in try await self.api(request) }
        var logger = Logger(label: "fake-google-play")
        logger.logLevel = .critical
        let port = Mutex<Int?>(nil)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in port.withLock { $0 = channel.localAddress?.port } }, logger: logger)
        state.withLock { $0.stopped = false }
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask(executorPreference: OwnThreadExecutor(label: "fake-google-play")) {
                try await app.runService()
            }
            defer {
                state.withLock { $0.stopped = true }
                group.cancelAll()
            }
            // Waits for the listener, not for a time: the minute is a bound for a machine loaded by a full
            // parallel run (a test there was seen taking 71 s), returned from as soon as the port is bound.
            var bound: Int?
            let deadline = ContinuousClock.now + .seconds(60)
            while bound == nil, ContinuousClock.now < deadline {
                bound = port.withLock { $0 }
                if bound == nil { try await Task.sleep(for: .milliseconds(10)) }
            }
            guard let bound else { throw FakeGoogleError("the fake Google did not start listening") }
            return try await body("http://127.0.0.1:\(bound)")
        }
    }

    private static func json(_ status: Int, _ object: Any) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return Response(
            status: .init(code: status), headers: [.contentType: "application/json; charset=UTF-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// Google's error body.
    private static func error(_ code: Int, _ status: String, _ message: String) -> Response {
        json(
            code,
            [
                "error": [
                    "code": code, "message": message, "status": status,
                    "errors": [["message": message, "domain": "global", "reason": status.lowercased()]],
                ] as [String: Any]
            ])
    }

    private func token(_ request: Hummingbird.Request) async throws -> Response {
        let body = String(buffer: try await request.body.collect(upTo: 64 * 1024))
        var fields: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? "" }
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        let problem = assertionProblem(fields)
        let issued: String? = state.withLock { state in
            state.tokenRequests += 1
            if let problem {
                state.assertionProblems.append(problem)
                return nil
            }
            let token = "ya29.fake-" + UUID().uuidString
            state.accessTokens.insert(token)
            return token
        }
        guard let issued else {
            return Self.json(400, ["error": "invalid_grant", "error_description": problem ?? "refused"])
        }
        return Self.json(200, ["access_token": issued, "expires_in": 3599, "token_type": "Bearer"])
    }

    /// Why the token endpoint refuses the form's assertion; nil when it is good.
    private func assertionProblem(_ fields: [String: String]) -> String? {
        guard fields["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else { return "grant_type" }
        guard let assertion = fields["assertion"] else { return "no assertion" }
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let header = Self.jsonObject(parts[0]), let claims = Self.jsonObject(parts[1]),
            let signature = Self.base64URLDecode(parts[2])
        else { return "malformed assertion" }
        guard header["alg"] as? String == "RS256" else { return "alg" }
        let valid = serviceAccountKey.publicKey.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: signature),
            for: SHA256.hash(data: Data((parts[0] + "." + parts[1]).utf8)), padding: .insecurePKCS1v1_5)
        guard valid else { return "signature" }
        guard claims["iss"] as? String == serviceAccountEmail else { return "iss" }
        guard claims["scope"] as? String == "https://www.googleapis.com/auth/androidpublisher" else { return "scope" }
        guard let audience = claims["aud"] as? String, audience.hasSuffix("/token") else { return "aud" }
        let now = Date().timeIntervalSince1970
        guard let exp = (claims["exp"] as? NSNumber)?.doubleValue, let iat = (claims["iat"] as? NSNumber)?.doubleValue,
            exp > now, iat <= now + 60, exp - iat <= 3600
        else { return "exp/iat" }
        return nil
    }

    private func api(_ request: Hummingbird.Request) async throws -> Response {
        let path = request.uri.path
        let query = request.uri.query ?? ""
        let bearer = (request.headers[.authorization] ?? "").replacingOccurrences(of: "Bearer ", with: "")
        let ordersCall = path.contains("/orders")
        let (fault, authorized) = state.withLock { state in
            state.requests.append(Request(method: request.method.rawValue, path: path, query: query))
            let fault: Fault?
            if ordersCall, !state.orderFaults.isEmpty {
                fault = state.orderFaults.removeFirst()
            } else {
                fault = state.faults.isEmpty ? nil : state.faults.removeFirst()
            }
            return (fault, state.accessTokens.contains(bearer))
        }
        guard authorized else {
            return Self.error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        }
        switch fault {
        case .status(let code, let status)?:
            return Self.error(code, status, "scripted")
        case .rateLimited(let seconds)?:
            var response = Self.error(429, "RESOURCE_EXHAUSTED", "Quota exceeded.")
            response.headers[HTTPField.Name("Retry-After")!] = "\(seconds)"
            return response
        case .hang(let duration)?:
            let end = ContinuousClock.now + duration
            while ContinuousClock.now < end, !state.withLock({ $0.stopped }) {
                try? await Task.sleep(for: .milliseconds(20))
            }
        case nil:
            break
        }
        let prefix = "/androidpublisher/v3/applications/"
        guard path.hasPrefix(prefix) else { return Self.error(404, "NOT_FOUND", "No such method.") }
        let rest = path.dropFirst(prefix.count).split(separator: "/").map(String.init)
        guard rest.first == packageName else {
            return Self.error(
                403, "PERMISSION_DENIED",
                "The current user has insufficient permissions to perform the requested operation.")
        }
        if rest.count == 3, rest[1] == "purchases", rest[2] == "voidedpurchases", request.method == .get {
            return voidedList(request.uri.queryParameters)
        }
        if rest.count == 3, rest[1] == "orders", request.method == .get {
            return orderAnswer(rest[2])
        }
        if rest.count == 2, rest[1] == "orders:batchGet", request.method == .get {
            return batchGet(request.uri.queryParameters.getAll("orderIds"))
        }
        guard rest.count == 6, rest[1] == "purchases", rest[2] == "products", rest[4] == "tokens" else {
            return Self.error(404, "NOT_FOUND", "No such method.")
        }
        let productId = rest[3]
        let tokenAndVerb = rest[5].split(separator: ":", maxSplits: 1).map(String.init)
        let token = tokenAndVerb[0]
        let verb = tokenAndVerb.count == 2 ? tokenAndVerb[1] : nil
        return state.withLock { state -> Response in
            guard var purchase = state.purchases[token], purchase.productId == productId else {
                return Self.error(400, "INVALID_ARGUMENT", "The purchase token is invalid.")
            }
            switch (request.method, verb) {
            case (.get, nil):
                return Self.json(200, Self.productPurchase(purchase))
            case (.post, "acknowledge"?):
                if state.acknowledgementsFail {
                    return Self.error(503, "UNAVAILABLE", "The service is currently unavailable.")
                }
                guard purchase.state == 0 else {
                    return Self.error(
                        400, "FAILED_PRECONDITION",
                        "The purchase is not in a valid state to perform the desired operation.")
                }
                purchase.acknowledged = true
            case (.post, "consume"?):
                guard purchase.state == 0 else {
                    return Self.error(
                        400, "FAILED_PRECONDITION",
                        "The purchase is not in a valid state to perform the desired operation.")
                }
                purchase.consumed = true
            default:
                return Self.error(404, "NOT_FOUND", "No such method.")
            }
            state.purchases[token] = purchase
            return Response(status: .noContent)
        }
    }

    private static func productPurchase(_ purchase: Purchase) -> [String: Any] {
        var object: [String: Any] = [
            "kind": "androidpublisher#productPurchase",
            "purchaseTimeMillis": String(purchase.purchaseTimeMillis),
            "purchaseState": purchase.state,
            "consumptionState": purchase.consumed ? 1 : 0,
            "developerPayload": "",
            "acknowledgementState": purchase.acknowledged ? 1 : 0,
            "purchaseToken": purchase.token,
            "productId": purchase.productId,
            "quantity": 1,
            "regionCode": purchase.regionCode,
        ]
        object["orderId"] = purchase.orderId
        object["purchaseType"] = purchase.purchaseType
        object["obfuscatedExternalAccountId"] = purchase.accountId
        return object
    }

    /// `orders.get`: 404 NOT_FOUND unless a purchase of the package has this order id and a charge.
    private func orderAnswer(_ orderId: String) -> Response {
        guard let order = order(orderId) else {
            return Self.error(404, "NOT_FOUND", "The order was not found.")
        }
        return Self.json(200, order)
    }

    /// `orders.batchget`: 1 to 1,000 distinct ids, and the whole request fails when one is not found.
    private func batchGet(_ orderIds: [String]) -> Response {
        guard (1...1000).contains(orderIds.count), Set(orderIds).count == orderIds.count else {
            return Self.error(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")
        }
        var orders: [[String: Any]] = []
        for id in orderIds {
            guard let order = order(id) else { return Self.error(404, "NOT_FOUND", "The order was not found.") }
            orders.append(order)
        }
        return Self.json(200, ["orders": orders])
    }

    /// The `Order` resource of the purchase whose order id is `orderId`.
    private func order(_ orderId: String) -> [String: Any]? {
        state.withLock { state -> [String: Any]? in
            guard let purchase = state.purchases.values.first(where: { $0.orderId == orderId }),
                let charged = purchase.charged
            else { return nil }
            let voided = state.voided.contains { $0.token == purchase.token }
            let derived = voided ? "REFUNDED" : ["PROCESSED", "CANCELED", "PENDING"][min(max(purchase.state, 0), 2)]
            let created = Date(timeIntervalSince1970: TimeInterval(purchase.purchaseTimeMillis) / 1000)
            let time = ISO8601DateFormatter().string(from: created)
            return [
                "orderId": orderId, "purchaseToken": purchase.token, "state": purchase.orderState ?? derived,
                "createTime": time, "lastEventTime": time,
                "buyerAddress": ["buyerCountry": purchase.regionCode],
                "lineItems": [
                    [
                        "productId": purchase.orderProductId ?? purchase.productId, "productTitle": "Item",
                        "total": charged.json, "tax": Money(charged.currencyCode, units: 0).json,
                        "listingPrice": charged.json,
                        "oneTimePurchaseDetails": ["quantity": 1, "purchaseOptionId": "default"],
                    ] as [String: Any]
                ],
                "total": charged.json, "tax": Money(charged.currencyCode, units: 0).json,
                "orderDetails": ["taxInclusive": true],
            ]
        }
    }

    private func voidedList(_ query: Hummingbird.Parameters) -> Response {
        let start = query["startTime"].flatMap { Int64(String($0)) } ?? 0
        let offset = query["token"].flatMap { Int(String($0).dropFirst("page-".count)) } ?? 0
        let entries = state.withLock { $0.voided }.filter { $0.voidedTimeMillis >= start }
        let page = entries.dropFirst(offset).prefix(pageSize)
        var object: [String: Any] = [
            "pageInfo": ["totalResults": entries.count, "resultPerPage": pageSize, "startIndex": offset],
            "voidedPurchases": page.map { entry -> [String: Any] in
                var item: [String: Any] = [
                    "kind": "androidpublisher#voidedPurchase", "purchaseToken": entry.token,
                    "purchaseTimeMillis": "1763000000000", "voidedTimeMillis": String(entry.voidedTimeMillis),
                    "voidedSource": 0, "voidedReason": entry.reason,
                ]
                item["orderId"] = entry.orderId
                return item
            },
        ]
        if offset + pageSize < entries.count {
            object["tokenPagination"] = ["nextPageToken": "page-\(offset + pageSize)"]
        }
        return Self.json(200, object)
    }

    private static func base64URLDecode(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }

    private static func jsonObject(_ segment: String) -> [String: Any]? {
        base64URLDecode(segment).flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
    }
}

public struct FakeGoogleError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
