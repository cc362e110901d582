import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Receipts

extension AppStoreServerAPIClient {
    /// One call: waits for the endpoint's rate limit, sends with a bearer token, retries as ``RetryPolicy``
    /// decides (429 / 5xx / no answer), and decodes the 2xx body as `Response` or an error body into
    /// ``AppStoreServerAPIError``.
    ///
    /// With a ``deadline`` (``within(_:)``) every wait is cut to it: an attempt gets what time is left,
    /// a backoff or `Retry-After` that ends past it is not waited for, and the failure is thrown now.
    func send<Response: Decodable>(
        _ method: HTTPMethod, _ path: String, query: [(String, String)] = [], body: Data? = nil,
        endpoint: RateLimits.Endpoint, environment: StoreEnvironment, as type: Response.Type
    ) async throws -> Response {
        guard let observer else {
            return try await attempts(
                method, path, query: query, body: body, endpoint: endpoint,
                environment: environment, as: type)
        }
        do {
            return try await attempts(
                method, path, query: query, body: body, endpoint: endpoint, environment: environment, as: type)
        } catch let error as AppStoreServerAPIError {
            observer.recordAppStoreFailure(endpoint: endpoint.rawValue, code: error.code.rawValue)
            throw error
        }
    }

    /// ``send(_:_:query:body:endpoint:environment:as:)``'s attempts.
    private func attempts<Response: Decodable>(
        _ method: HTTPMethod, _ path: String, query: [(String, String)], body: Data?,
        endpoint: RateLimits.Endpoint, environment: StoreEnvironment, as type: Response.Type
    ) async throws -> Response {
        let url = configuration.baseURL(for: environment) + path + Self.queryString(query)
        let sandbox = environment == .sandbox
        let policy = RetryPolicy(configuration, shortestAttempt: Self.shortestAttempt)
        var logger = self.logger
        logger[metadataKey: "endpoint"] = "\(endpoint.rawValue)"
        logger[metadataKey: "environment"] = "\(environment)"
        var renewedToken = false
        var attempt = 1
        while true {
            let attemptTimeout = try timeLeft(for: endpoint)
            try await limiter.acquire(endpoint, sandbox: sandbox, deadline: deadline)
            let token = try await signer.token()
            let request = Self.request(method, url, body: body, token: token)

            let outcome: RetryPolicy.Outcome
            let sent = now()
            let exchanged = try await exchange(request, timeout: attemptTimeout, endpoint: endpoint)
            if let observer {
                var status: Int?
                if case .answered(let code, _, _) = exchanged { status = code }
                observer.recordAppStoreRequest(
                    endpoint: endpoint.rawValue, status: status, duration: now() - sent)
            }
            switch exchanged {
            case .answered(let status, _, let bytes) where (200..<300).contains(status):
                return try Self.decode(Response.self, from: bytes, status: status, endpoint: endpoint)
            case .answered(let status, let headers, let bytes):
                logger.debug("App Store Server API error", metadata: ["status": "\(status)", "attempt": "\(attempt)"])
                let error = Self.apiError(status: status, body: bytes)
                outcome = .answered(status: status, error: error, retryAt: Self.retryAfter(headers, now: date()))
            case .noAnswer(let failure):
                outcome = .noAnswer(failure)
            }

            let decision = policy.decide(
                after: outcome, attempt: attempt, renewedToken: renewedToken, deadline: deadline, now: now(),
                date: date())
            if let until = decision.holdEndpointUntil { await limiter.hold(endpoint, sandbox: sandbox, until: until) }
            switch decision.action {
            case .renewToken:
                renewedToken = true
                await signer.discard()
            case .giveUp(let failure):
                throw failure
            case .retry(let wait, let failure):
                logger.notice(
                    "App Store Server API call failed; retrying",
                    metadata: ["attempt": "\(attempt)", "wait": "\(wait)", "error": "\(failure)"])
                try await clock.sleep(for: wait)
                attempt += 1
            }
        }
    }

    /// The request of one attempt, with a bearer token of its own (a retry may carry a renewed one).
    private static func request(_ method: HTTPMethod, _ url: String, body: Data?, token: String) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "ShopLedger")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        return request
    }

    /// A 2xx body as `Response`; another shape is ``AppStoreServerAPIError/Code/unexpectedResponse``.
    private static func decode<Response: Decodable>(
        _ type: Response.Type, from bytes: Data, status: Int, endpoint: RateLimits.Endpoint
    ) throws(AppStoreServerAPIError) -> Response {
        do {
            return try JSONDecoder().decode(Response.self, from: bytes)
        } catch {
            throw AppStoreServerAPIError(
                .unexpectedResponse, "\(endpoint.rawValue) answered \(status) with a body of another shape",
                httpStatus: status)
        }
    }

    /// The shortest attempt worth starting: less time than this left before the deadline, and the call
    /// gives up rather than send a request it cannot wait for.
    static let shortestAttempt: Duration = .milliseconds(50)

    /// How long the next attempt may take: the configured request timeout, cut to the time left before
    /// ``deadline``; throws ``AppStoreServerAPIError/Code/timeout`` when too little is left.
    private func timeLeft(for endpoint: RateLimits.Endpoint) throws(AppStoreServerAPIError) -> Duration {
        guard let deadline else { return configuration.requestTimeout }
        let left = deadline - now()
        guard left >= Self.shortestAttempt else {
            throw AppStoreServerAPIError(.timeout, "\(endpoint.rawValue): no time left before this call's deadline")
        }
        return min(configuration.requestTimeout, left)
    }

    /// What one attempt got: Apple's answer, whatever its status, or why there was none.
    private enum Exchange {
        case answered(status: Int, headers: HTTPHeaders, body: Data)
        /// A timeout or a failed connection, as the client's error.
        case noAnswer(AppStoreServerAPIError)
    }

    /// Sends `request` and reads the whole answer within `timeout`; only cancellation is thrown.
    private func exchange(
        _ request: HTTPClientRequest, timeout: Duration, endpoint: RateLimits.Endpoint
    ) async throws -> Exchange {
        do {
            let (status, headers, body) = try await exchange(request, timeout: timeout)
            return .answered(status: status, headers: headers, body: body)
        } catch let error as HTTPClientError
            where [.deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout].contains(error)
        {
            return .noAnswer(AppStoreServerAPIError(.timeout, "\(endpoint.rawValue) did not answer in time"))
        } catch is ExchangeTimeout {
            return .noAnswer(AppStoreServerAPIError(.timeout, "\(endpoint.rawValue) did not answer in time"))
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            try Task.checkCancellation()
            return .noAnswer(AppStoreServerAPIError(.transport, "\(endpoint.rawValue): \(error)"))
        }
    }

    /// Sends `request` and reads the whole answer within `timeout` on ``clock``.
    private func exchange(_ request: HTTPClientRequest, timeout: Duration) async throws -> (Int, HTTPHeaders, Data) {
        let clock = self.clock
        let transportDeadline = self.transportDeadline
        return try await withThrowingTaskGroup(of: (Int, HTTPHeaders, Data)?.self) { group in
            group.addTask {
                let deadline: NIODeadline =
                    transportDeadline ? .now() + .nanoseconds(Int64(timeout.seconds * 1e9)) : .distantFuture
                let response = try await httpClient.execute(request, deadline: deadline, logger: nil)
                let body = try await response.body.collect(upTo: Self.maxResponseBytes)
                return (Int(response.status.code), response.headers, Data(body.readableBytesView))
            }
            group.addTask {
                try await clock.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let answer = first else { throw ExchangeTimeout() }
            return answer
        }
    }

    /// `{errorCode, errorMessage}` (or just the status) as the client's error.
    static func apiError(status: Int, body: Data) -> AppStoreServerAPIError {
        let decoded = try? JSONDecoder().decode(Wire.ErrorBody.self, from: body)
        let message = decoded?.errorMessage.map { String($0.prefix(200)) } ?? "HTTP \(status)"
        return AppStoreServerAPIError(.apiError, message, httpStatus: status, apiErrorCode: decoded?.errorCode)
    }

    /// Apple's `Retry-After`: a UNIX time in milliseconds. A small number is read as seconds from `now`
    /// (the HTTP meaning), so a proxy that rewrites it still works.
    static func retryAfter(_ headers: HTTPHeaders, now: Date) -> Date? {
        guard let text = headers.first(name: "Retry-After")?.trimmingCharacters(in: .whitespaces),
            let value = Int64(text), value >= 0
        else { return nil }
        if value > 1_000_000_000_000 { return Date(timeIntervalSince1970: TimeInterval(value) / 1000) }
        return now.addingTimeInterval(TimeInterval(value))
    }

    static func queryString(_ query: [(String, String)]) -> String {
        guard !query.isEmpty else { return "" }
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return "?"
            + query.map { name, value in
                name + "=" + (value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")
            }.joined(separator: "&")
    }
}

/// The request timeout ran out before the whole answer was read.
private struct ExchangeTimeout: Error {}
