import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

/// What a failed attempt's `error` says, as `webhook_attempts`, the admin API and `webhooks show` keep
/// and show it: a class, never the socket's or TLS library's words (they would turn the event detail
/// into a scanner's report). The details go to the server's log.
public enum WebhookFailure: String, Sendable, CaseIterable {
    /// No answer within the timeout (connecting included).
    case timeout
    /// The host name did not resolve.
    case dnsFailed = "dns_failed"
    /// No connection, or it broke before an answer came.
    case connectionFailed = "connection_failed"
    /// The TLS handshake failed: the certificate, its name, or no TLS at all.
    case tlsFailed = "tls_failed"
    /// An answer other than 2xx and 3xx; its status is kept beside.
    case httpStatus = "http_status"
    /// A 3xx answer: redirects are never followed.
    case redirectNotFollowed = "redirect_not_followed"
    /// The URL's address, or one its host resolved to, is no allowed destination (``WebhookDestinations``).
    case destinationRefused = "destination_refused"
}

/// A destination refused at delivery.
struct WebhookDestinationRefused: Error, CustomStringConvertible {
    let description: String
}

/// Posts one signed event to one endpoint, to an address it checked: a host name is resolved by
/// ``resolver`` and every address it resolves to must be allowed by ``destinations`` (a name that resolves
/// to a private address is refused however it passed when the endpoint was added: DNS rebinding), then
/// the connection goes to one of those addresses through a client pinned to it (``WebhookClients``),
/// never through a second lookup. Redirects are never followed (a 3xx is a failed attempt: the
/// endpoint's URL is what the operator set, and a redirect could point anywhere); the answer's body is
/// read only up to ``responseLimit`` bytes; the whole exchange, lookup included, gets `timeout`.
public struct WebhookPoster: Sendable {
    /// Bytes of an answer's body read at most; the rest is never read.
    public static let responseLimit = 4096

    let clients: WebhookClients
    let destinations: WebhookDestinations
    let resolver: any WebhookResolver
    let timeout: Duration
    let userAgent: String

    public init(
        clients: WebhookClients, destinations: WebhookDestinations, resolver: any WebhookResolver,
        timeout: Duration, userAgent: String
    ) {
        self.clients = clients
        self.destinations = destinations
        self.resolver = resolver
        self.timeout = timeout
        self.userAgent = userAgent
    }

    /// Posts `delivery`'s event, signed now. A 2xx answer is a delivery; anything else, or no answer
    /// in time, a failure: its class in `error`, what exactly happened in `detail` (for the log only).
    public func post(_ delivery: WebhookDelivery) async -> WebhookAttemptResult {
        let body = delivery.event.body
        let startedAt = Date()
        let start = ContinuousClock.now
        let timestamp = Int64(startedAt.timeIntervalSince1970.rounded(.down))
        var request = HTTPClientRequest(url: delivery.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: userAgent)
        request.headers.add(
            name: WebhookSignature.headerName,
            value: WebhookSignature.header(body: Data(body.utf8), secret: delivery.secret, timestamp: timestamp))
        request.headers.add(name: "ShopLedger-Event-Id", value: WebhookEvent.publicId(delivery.event.eventId))
        request.headers.add(name: "ShopLedger-Event-Type", value: delivery.event.type.rawValue)
        request.headers.add(name: "ShopLedger-Delivery-Attempt", value: String(delivery.attempt))
        request.body = .bytes(ByteBuffer(string: body))

        func result(_ status: Int?, _ failure: WebhookFailure?, _ detail: String?) -> WebhookAttemptResult {
            WebhookAttemptResult(
                outcome: failure == nil ? .delivered : .failed, statusCode: status, error: failure?.rawValue,
                startedAt: startedAt, duration: ContinuousClock.now - start,
                detail: detail.map { String($0.prefix(500)) })
        }
        do {
            guard let status = try await exchange(request) else {
                return result(nil, .timeout, "no answer within \(Self.text(timeout))")
            }
            switch status {
            case 200..<300: return result(status, nil, nil)
            case 300..<400: return result(status, .redirectNotFollowed, "HTTP \(status): redirects are not followed")
            default: return result(status, .httpStatus, "HTTP \(status)")
            }
        } catch {
            return result(nil, Self.failure(for: error), "\(error)")
        }
    }

    /// The class of an error thrown before any answer came.
    static func failure(for error: any Error) -> WebhookFailure {
        switch error {
        case is WebhookDestinationRefused:
            return .destinationRefused
        case is WebhookResolutionError:
            return .dnsFailed
        case let error as HTTPClientError
        where [.deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout, .tlsHandshakeTimeout].contains(error):
            return .timeout
        case let error as ChannelError:
            if case .connectTimeout = error { return .timeout }
            return .connectionFailed
        case is NIOSSLError, is BoringSSLError, is NIOSSLExtraError:
            return .tlsFailed
        default:
            return .connectionFailed
        }
    }

    /// The answer's status, after reading at most ``responseLimit`` bytes of its body; nil when no
    /// answer came within the timeout.
    private func exchange(_ request: HTTPClientRequest) async throws -> Int? {
        let timeout = self.timeout
        return try await withThrowingTaskGroup(of: Int?.self) { group in
            group.addTask {
                let lease = try await self.lease(for: request.url)
                do {
                    let status = try await Self.send(request, through: lease.client, timeout: timeout)
                    await clients.release(lease)
                    return status
                } catch {
                    await clients.release(lease)
                    throw error
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { return nil }
            return first
        }
    }

    private static func send(
        _ request: HTTPClientRequest, through client: HTTPClient, timeout: Duration
    ) async throws
        -> Int
    {
        let nanoseconds = Int64(timeout.seconds * 1e9)
        let response = try await client.execute(request, deadline: .now() + .nanoseconds(nanoseconds), logger: nil)
        var read = 0
        for try await chunk in response.body {
            read += chunk.readableBytes
            if read >= Self.responseLimit { break }
        }
        return Int(response.status.code)
    }

    /// A client that reaches `url`'s host only at an address checked now. The host is read as the HTTP
    /// client reads it (Foundation's URL, IPv6 brackets dropped), so that the pin is the one it uses.
    func lease(for url: String) async throws -> WebhookClients.Lease {
        guard let parsed = URL(string: url), var host = parsed.host, !host.isEmpty else {
            throw HTTPClientError.invalidURL
        }
        if host.hasPrefix("[") { host.removeFirst() }
        if host.hasSuffix("]") { host.removeLast() }
        if let address = WebhookIPAddress(host) {
            // An address in standard form: the HTTP client connects to it as it is.
            try check(address, of: host)
            return try await clients.leaseDirect()
        }
        let addresses = try await resolver.addresses(of: host)
        guard !addresses.isEmpty else { throw WebhookResolutionError(host: host, reason: "no address") }
        for address in addresses { try check(address, of: host) }
        return try await clients.lease(host: host, addresses: addresses)
    }

    private func check(_ address: WebhookIPAddress, of host: String) throws(WebhookDestinationRefused) {
        guard let refusal = destinations.refusal(of: address) else { return }
        let named = host == address.description ? host : "\(host.prefix(100)) resolves to \(address), which"
        throw WebhookDestinationRefused(description: "\(named) is \(refusal): not a webhook destination")
    }

    private static func text(_ duration: Duration) -> String {
        String(format: "%.1f s", duration.seconds)
    }
}
