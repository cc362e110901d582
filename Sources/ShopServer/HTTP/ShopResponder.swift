import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Shop

/// Wraps the router: every request, on both surfaces, passes through here once.
///
/// - refuses a declared body over the limit with 413 before reading it;
/// - gives the request at most `timeout`, then cancels it (its database query with it: a purchase is
///   one statement, so it is either recorded or not; its verification at its next step) and answers
///   503 (SeSAC: 500). The cancel is issued `cancellationAllowance` early, the time the database client
///   may take to give up on a query the server does not stop; the answer leaves at `timeout` even when
///   the work has not stopped by then (``PendingAnswer``);
/// - answers a timeout or an oversized body in its surface's way (``ErrorMapping``; route errors are
///   answered by ``ErrorMiddleware``): `/v1/...` is the SeSAC surface, everything else the JSON one;
/// - writes one log line per request (request id, client address, method, path, status, duration),
///   echoes the request id in `x-request-id`, and records the request in the metrics. The client is
///   the TCP peer, or, when the peer is a trusted proxy, the client its `X-Forwarded-For` names
///   (``TrustedProxies/client(peer:forwardedFor:)``); routes read it as `context.clientAddress`.
struct ShopResponder<Inner: HTTPResponder>: HTTPResponder where Inner.Context: ClientAddressContext {
    typealias Context = Inner.Context

    let inner: Inner
    let bodyLimit: Int
    let timeout: Duration
    var cancellationAllowance: Duration = .zero
    let metrics: ShopMetrics
    var trustedProxies: TrustedProxies = .none
    /// Shared by copies of this responder.
    let deadlines = RequestDeadlines()

    static var requestIdHeader: HTTPField.Name { HTTPField.Name("x-request-id")! }
    static var forwardedForHeader: HTTPField.Name { HTTPField.Name("x-forwarded-for")! }
    static var knownMethods: Set<HTTPRequest.Method> { [.get, .head, .post, .put, .delete, .patch, .options] }

    func respond(to request: Request, context: Context) async throws -> Response {
        let start = ContinuousClock.now
        var context = context
        if !trustedProxies.isEmpty {
            context.clientAddress = trustedProxies.client(
                peer: context.peerAddress, forwardedFor: request.headers[values: Self.forwardedForHeader])
        }
        let surface = Surface(path: request.uri.path)
        var response: Response
        do {
            if let length = request.headers[.contentLength].flatMap(Int.init), length > bodyLimit {
                throw InputError(
                    "body_too_large", "the body is \(length) bytes, over the \(bodyLimit)-byte limit",
                    status: .contentTooLarge)
            }
            let routed = context
            response = try await withTimeout { try await inner.respond(to: request, context: routed) }
        } catch {
            // Route errors were answered by ErrorMiddleware; what reaches here is the timeout or the body limit.
            response = try surface.response(for: error, request: request, context: context)
        }
        let duration = ContinuousClock.now - start
        response.headers[Self.requestIdHeader] = context.id
        let route = context.endpointPath ?? "unmatched"
        // Labels stay bounded whatever clients send: route templates, known methods, status codes.
        let method = Self.knownMethods.contains(request.method) ? request.method.rawValue : "other"
        metrics.recordRequest(route: route, method: method, status: response.status.code, duration: duration)
        context.logger.info(
            "request",
            metadata: [
                "client": .string(context.clientAddress?.description ?? "unknown"),
                "method": .string(request.method.rawValue), "path": .string(request.uri.path),
                "status": .stringConvertible(response.status.code),
                "duration_ms": .string(Self.milliseconds(duration)),
            ])
        return response
    }

    /// Runs `work` in a task of its own (cancelling it leaves the connection's task alone) and cancels
    /// it when `timeout` (less the allowance) passes first; then gives it the allowance to stop and
    /// answers the timeout at `timeout`, whether or not it has stopped.
    private func withTimeout(_ work: @escaping @Sendable () async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let cancelAt = max(timeout - cancellationAllowance, timeout / 2)
        let answer = PendingAnswer()
        let task = Task {
            let result: Result<Response, any Error>
            do {
                // Calls the work makes to others fit before its cancel (`RequestBudget`).
                result = .success(
                    try await RequestBudget.$workDeadline.withValue(start + cancelAt) { try await work() })
            } catch {
                result = .failure(error)
            }
            answer.give(result)
        }
        let timeout = self.timeout
        let ticket = deadlines.register(deadline: start + cancelAt) {
            task.cancel()
            // Only a request past its deadline pays for a timer of its own.
            Task {
                try? await Task.sleep(until: start + timeout, clock: .continuous)
                answer.give(.failure(RequestTimeoutError(timeout: timeout)))
            }
        }
        let result = await withTaskCancellationHandler {
            await answer.wait()
        } onCancel: {
            task.cancel()
            answer.give(.failure(CancellationError()))
        }
        if deadlines.finish(ticket) { throw RequestTimeoutError(timeout: timeout) }
        return try result.get()
    }

    /// `%.3f` of the duration in milliseconds, written without `String(format:)` (a Foundation format
    /// string per request showed in the profile): whole microseconds, so three decimals are exact.
    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let micros = max(0, seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
        let fraction = String(micros % 1000)
        return String(micros / 1000) + "." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}

/// Which contract a path belongs to.
enum Surface {
    /// `/v1/...`: the SeSAC-compatible surface of the existing iOS clients.
    case sesac
    /// Everything else: the JSON surface and operations endpoints.
    case json

    init(path: String) {
        self = path.hasPrefix("/v1/") || path == "/v1" ? .sesac : .json
    }

    func response(for error: any Error, request: Request, context: some RequestContext) throws -> Response {
        switch self {
        case .sesac:
            return try ErrorMapping.sesacReply(for: error, logger: context.logger).response(
                from: request, context: context)
        case .json:
            return try ErrorMapping.apiError(for: error, logger: context.logger).response(
                from: request, context: context)
        }
    }
}
