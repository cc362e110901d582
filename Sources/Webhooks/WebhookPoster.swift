import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Posts one signed event to one endpoint. Redirects are never followed (a 3xx is a failed attempt:
/// the endpoint's URL is what the operator set, and a redirect could point anywhere); the answer's body
/// is read only up to ``responseLimit`` bytes; the whole exchange gets `timeout`.
public struct WebhookPoster: Sendable {
    /// Bytes of an answer's body read at most; the rest is never read.
    public static let responseLimit = 4096

    let client: HTTPClient
    let timeout: Duration
    let userAgent: String

    /// A client for deliveries: no redirects, no decompression, HTTP/1.1 and HTTP/2 as the endpoint offers.
    public static func makeClient() -> HTTPClient {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(5)),
            connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 8),
            decompression: .disabled)
        configuration.maximumUsesPerConnection = 1000
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    public init(client: HTTPClient, timeout: Duration, userAgent: String) {
        self.client = client
        self.timeout = timeout
        self.userAgent = userAgent
    }

    /// Posts `delivery`'s event, signed now. A 2xx answer is a delivery; anything else, or no answer
    /// in time, a failure with what was seen.
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

        func result(_ status: Int?, _ error: String?) -> WebhookAttemptResult {
            let delivered = error == nil && status.map { (200..<300).contains($0) } == true
            return WebhookAttemptResult(
                outcome: delivered ? .delivered : .failed, statusCode: status,
                error: delivered ? nil : (error ?? "HTTP \(status ?? 0)"), startedAt: startedAt,
                duration: ContinuousClock.now - start)
        }
        do {
            let status = try await exchange(request)
            guard let status else { return result(nil, "no answer within \(Self.text(timeout))") }
            if (300..<400).contains(status) { return result(status, "HTTP \(status): redirects are not followed") }
            return result(status, nil)
        } catch let error as HTTPClientError
            where [.deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout].contains(error)
        {
            return result(nil, "no answer within \(Self.text(timeout))")
        } catch {
            return result(nil, "\(error)")
        }
    }

    /// The answer's status, after reading at most ``responseLimit`` bytes of its body; nil when no
    /// answer came within the timeout.
    private func exchange(_ request: HTTPClientRequest) async throws -> Int? {
        let timeout = self.timeout
        let client = self.client
        return try await withThrowingTaskGroup(of: Int?.self) { group in
            group.addTask {
                let nanoseconds = Int64(timeout.seconds * 1e9)
                let response = try await client.execute(
                    request, deadline: .now() + .nanoseconds(nanoseconds), logger: nil)
                var read = 0
                for try await chunk in response.body {
                    read += chunk.readableBytes
                    if read >= Self.responseLimit { break }
                }
                return Int(response.status.code)
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

    private static func text(_ duration: Duration) -> String {
        String(format: "%.1f s", duration.seconds)
    }
}
