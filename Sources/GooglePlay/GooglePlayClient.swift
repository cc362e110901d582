import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// A client of the Google Play Developer API (androidpublisher v3) for one app's one-time products:
/// `purchases.products.get`, `:acknowledge`, `:consume`, `purchases.voidedpurchases.list`, and the Orders
/// API's `orders.get` and `orders.batchget` (what a buyer was charged).
///
/// Authenticated as a service account (``AccessTokenSource``); requests wait for the app's quota
/// (``GooglePlayRateLimiter``), time out, and are retried on 429 (at Google's `Retry-After`), 5xx and
/// no answer (``GooglePlayRetryPolicy``). A call made inside a customer's request goes through
/// ``within(_:)`` and ends by the request's deadline whatever Google does.
///
/// Errors: ``GooglePlayError``, or `CancellationError` when the calling task is cancelled.
public struct GooglePlayClient: Sendable {
    public let configuration: GooglePlayConfiguration
    let httpClient: HTTPClient
    let tokens: AccessTokenSource
    let limiter: GooglePlayRateLimiter
    let logger: Logger
    /// Counts requests and failures (the server's metrics), when given.
    let observer: (any GooglePlayObserver)?
    /// Set by ``within(_:)``: every call ends by then.
    private(set) var deadline: ContinuousClock.Instant?

    static let maxResponseBytes = 4 * 1024 * 1024
    /// A paginated list stops after this many pages (a server that never stops giving a next page).
    static let maxPages = 10_000
    static let shortestAttempt: Duration = .milliseconds(50)

    public init(
        configuration: GooglePlayConfiguration, httpClient: HTTPClient = .shared,
        logger: Logger = Logger(label: "shopledger.googleplay"), observer: (any GooglePlayObserver)? = nil
    ) throws(GooglePlayError) {
        try configuration.validate()
        self.configuration = configuration
        self.httpClient = httpClient
        self.logger = logger
        self.observer = observer
        self.tokens = AccessTokenSource(
            credential: configuration.credential, tokenURL: configuration.tokenURL, httpClient: httpClient)
        self.limiter = GooglePlayRateLimiter(
            requestsPerSecond: configuration.requestsPerSecond, backgroundShare: configuration.backgroundShare)
    }

    /// This client (the same token and quota) for calls that must end by `deadline`.
    public func within(_ deadline: ContinuousClock.Instant) -> GooglePlayClient {
        var client = self
        client.deadline = min(deadline, self.deadline ?? deadline)
        return client
    }

    public var packageName: String { configuration.packageName }

    // MARK: One-time products

    /// `purchases.products.get`: the purchase `token` of `productId` in the configured package.
    public func productPurchase(productId: String, token: String) async throws -> ProductPurchase {
        try await send(.GET, try productPath(productId, token), endpoint: "products_get", as: ProductPurchase.self)
    }

    /// `purchases.products.acknowledge`: without it Google refunds the purchase three days after it.
    public func acknowledge(productId: String, token: String) async throws {
        _ = try await send(
            .POST, try productPath(productId, token) + ":acknowledge", body: Data("{}".utf8),
            endpoint: "products_acknowledge", as: Empty.self)
    }

    /// `purchases.products.consume`: a consumable can be bought again once consumed.
    public func consume(productId: String, token: String) async throws {
        _ = try await send(
            .POST, try productPath(productId, token) + ":consume", endpoint: "products_consume", as: Empty.self)
    }

    // MARK: Orders

    /// The most order ids one `orders.batchget` asks for. Google takes up to 1,000, but every id is in the
    /// URL's query: 100 keep it near 3 KB.
    public static let ordersPerBatch = 100

    /// `orders.get`: the order `orderId` of the configured package.
    public func order(_ orderId: String) async throws -> PlayOrder {
        try await send(
            .GET, "/androidpublisher/v3/applications/\(try segment(packageName))/orders/\(try segment(orderId))",
            endpoint: "orders_get", as: PlayOrder.self)
    }

    /// `orders.batchget`: the orders `orderIds` (1 to ``ordersPerBatch`` distinct ids). Google fails the
    /// whole request when one id is not found or not the package's (then ask ``order(_:)`` one by one).
    public func orders(_ orderIds: [String]) async throws -> [PlayOrder] {
        let ids = Array(Set(orderIds)).sorted()
        guard (1...Self.ordersPerBatch).contains(ids.count) else {
            throw GooglePlayError(.invalidInput, "orders.batchget takes 1 to \(Self.ordersPerBatch) order ids")
        }
        for id in ids { _ = try segment(id) }
        let answer = try await send(
            .GET, "/androidpublisher/v3/applications/\(try segment(packageName))/orders:batchGet",
            query: ids.map { ("orderIds", $0) }, endpoint: "orders_batchget", as: Wire.BatchGetOrdersResponse.self)
        return answer.orders ?? []
    }

    // MARK: Voided purchases

    /// `purchases.voidedpurchases.list`: every purchase voided (cancelled, refunded, charged back) since
    /// `start` (Google keeps 30 days), all pages (`token` while `tokenPagination.nextPageToken`), each page
    /// handed to `page` as it arrives.
    public func voidedPurchases(
        since start: Date, until end: Date? = nil, maxResults: Int = 1000,
        page: (_ purchases: [VoidedPurchase]) async throws -> Void
    ) async throws {
        var query: [(String, String)] = [
            ("startTime", String(Int64(start.timeIntervalSince1970 * 1000))), ("maxResults", String(maxResults)),
        ]
        if let end { query.append(("endTime", String(Int64(end.timeIntervalSince1970 * 1000)))) }
        let path = "/androidpublisher/v3/applications/\(try segment(packageName))/purchases/voidedpurchases"
        var pageToken: String?
        for _ in 0..<Self.maxPages {
            let answer = try await send(
                .GET, path, query: query + (pageToken.map { [("token", $0)] } ?? []), endpoint: "voided_purchases",
                as: Wire.VoidedPurchasesListResponse.self)
            try await page(answer.voidedPurchases ?? [])
            guard let next = answer.tokenPagination?.nextPageToken, !next.isEmpty, next != pageToken else { return }
            pageToken = next
        }
        throw GooglePlayError(.unexpectedResponse, "voided purchases: more than \(Self.maxPages) pages")
    }

    // MARK: Transport

    private struct Empty: Decodable {}

    private func productPath(_ productId: String, _ token: String) throws(GooglePlayError) -> String {
        "/androidpublisher/v3/applications/\(try segment(packageName))/purchases/products/\(try segment(productId))"
            + "/tokens/\(try segment(token))"
    }

    /// A path segment: 1–512 bytes of letters, digits and `-._~` (purchase tokens are such).
    private func segment(_ value: String) throws(GooglePlayError) -> String {
        guard (1...512).contains(value.utf8.count),
            value.unicodeScalars.allSatisfy({
                $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-._~".unicodeScalars.contains($0))
            })
        else { throw GooglePlayError(.invalidInput, "an id is empty, too long or not URL-safe") }
        return value
    }

    /// One call: the attempts of ``attempts(_:_:query:body:endpoint:as:)``, its failure told to the observer.
    func send<Response: Decodable>(
        _ method: HTTPMethod, _ path: String, query: [(String, String)] = [], body: Data? = nil, endpoint: String,
        as type: Response.Type
    ) async throws -> Response {
        do {
            return try await attempts(method, path, query: query, body: body, endpoint: endpoint, as: type)
        } catch let error as GooglePlayError {
            observer?.recordGooglePlayFailure(endpoint: endpoint, code: error.code.rawValue)
            throw error
        }
    }

    private func attempts<Response: Decodable>(
        _ method: HTTPMethod, _ path: String, query: [(String, String)], body: Data?, endpoint: String,
        as type: Response.Type
    ) async throws -> Response {
        let url = configuration.trimmedAPIBaseURL + path + Self.queryString(query)
        let policy = GooglePlayRetryPolicy(
            maxAttempts: configuration.maxAttempts, initialBackoff: configuration.initialBackoff,
            maxRetryWait: configuration.maxRetryWait, shortestAttempt: Self.shortestAttempt)
        var renewedToken = false
        var attempt = 1
        while true {
            let timeout = try timeLeft()
            try await limiter.acquire(deadline: deadline)
            let token = try await tokens.token(timeout: timeout)
            var request = HTTPClientRequest(url: url)
            request.method = method
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            request.headers.add(name: "Accept", value: "application/json")
            request.headers.add(name: "User-Agent", value: "ShopLedger")
            if let body {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(bytes: body))
            }
            let outcome: GooglePlayRetryPolicy.Outcome
            let sent = ContinuousClock.now
            let exchanged = try await exchange(request, timeout: try timeLeft())
            if let observer {
                var status: Int?
                if case .answered(let code, _, _) = exchanged { status = code }
                observer.recordGooglePlayRequest(endpoint: endpoint, status: status, duration: .now - sent)
            }
            switch exchanged {
            case .answered(let status, _, let bytes) where (200..<300).contains(status):
                return try Self.decode(Response.self, from: bytes, status: status)
            case .answered(let status, let headers, let bytes):
                outcome = .answered(
                    status: status, error: Self.apiError(status: status, body: bytes),
                    retryAfter: Self.retryAfter(headers, now: Date()))
            case .noAnswer(let failure):
                outcome = .noAnswer(failure)
            }
            let (action, hold) = policy.decide(
                after: outcome, attempt: attempt, renewedToken: renewedToken,
                timeLeft: deadline.map { $0 - .now })
            if let hold { await limiter.hold(until: .now + hold) }
            switch action {
            case .renewToken:
                renewedToken = true
                await tokens.discard()
            case .giveUp(let failure):
                throw failure
            case .retry(let wait, let failure):
                logger.notice(
                    "Google Play Developer API call failed; retrying",
                    metadata: ["attempt": "\(attempt)", "wait": "\(wait)", "error": "\(failure)"])
                try await Task.sleep(for: wait)
                attempt += 1
            }
        }
    }

    private func timeLeft() throws(GooglePlayError) -> Duration {
        guard let deadline else { return configuration.requestTimeout }
        let left = deadline - .now
        guard left >= Self.shortestAttempt else {
            throw GooglePlayError(.timeout, "no time left before this call's deadline")
        }
        return min(configuration.requestTimeout, left)
    }

    private enum Exchange {
        case answered(status: Int, headers: HTTPHeaders, body: Data)
        case noAnswer(GooglePlayError)
    }

    private func exchange(_ request: HTTPClientRequest, timeout: Duration) async throws -> Exchange {
        do {
            let response = try await httpClient.execute(
                request, deadline: .now() + .nanoseconds(Int64(timeout.seconds * 1e9)), logger: nil)
            let body = try await response.body.collect(upTo: Self.maxResponseBytes)
            return .answered(
                status: Int(response.status.code), headers: response.headers, body: Data(body.readableBytesView))
        } catch let error as HTTPClientError
            where [.deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout].contains(error)
        {
            return .noAnswer(GooglePlayError(.timeout, "Google Play did not answer in time"))
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            try Task.checkCancellation()
            return .noAnswer(GooglePlayError(.transport, "Google Play: \(error)"))
        }
    }

    private static func decode<Response: Decodable>(
        _ type: Response.Type, from bytes: Data, status: Int
    ) throws(GooglePlayError) -> Response {
        // acknowledge and consume answer an empty body.
        let data = bytes.isEmpty ? Data("{}".utf8) : bytes
        do {
            return try JSONDecoder().decode(Response.self, from: data)
        } catch {
            throw GooglePlayError(
                .unexpectedResponse, "Google answered \(status) with a body of another shape",
                httpStatus: status)
        }
    }

    /// Google's `{"error": {"code", "message", "status"}}` (or just the status) as the client's error.
    static func apiError(status: Int, body: Data) -> GooglePlayError {
        let decoded = try? JSONDecoder().decode(Wire.ErrorBody.self, from: body)
        let message = decoded?.error.message.map { String($0.prefix(200)) } ?? "HTTP \(status)"
        return GooglePlayError(.apiError, message, httpStatus: status, apiStatus: decoded?.error.status)
    }

    /// `Retry-After`: delay-seconds, or an HTTP-date.
    static func retryAfter(_ headers: HTTPHeaders, now: Date) -> Duration? {
        guard let text = headers.first(name: "Retry-After")?.trimmingCharacters(in: .whitespaces) else { return nil }
        if let seconds = Int64(text), seconds >= 0 { return .seconds(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: text) else { return nil }
        return .seconds(max(0, date.timeIntervalSince(now)))
    }

    static func queryString(_ query: [(String, String)]) -> String {
        guard !query.isEmpty else { return "" }
        return "?" + query.map { $0 + "=" + AccessTokenSource.formEncode($1) }.joined(separator: "&")
    }
}
