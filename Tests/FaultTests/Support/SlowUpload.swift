import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A purchase whose body arrives slowly: the head and the first half now, the rest when `finish()` is
/// called. To the server it is a request in flight for as long as the client takes: a phone on a slow
/// network, and the honest way to have requests in flight at a chosen moment on the real binary.
final class SlowUpload: Sendable {
    let request: PurchaseRequest
    private let continuation: AsyncStream<ByteBuffer>.Continuation
    private let stream: AsyncStream<ByteBuffer>

    init(_ request: PurchaseRequest) {
        self.request = request
        (stream, continuation) = AsyncStream<ByteBuffer>.makeStream()
        continuation.yield(ByteBuffer(bytes: request.body.prefix(request.body.count / 2)))
    }

    /// Sends the request (head and first half at once, the rest after `finish()`); the outcome and when it came.
    func send(_ http: FaultHTTP, baseURL: String) async -> (FaultHTTP.Outcome, ContinuousClock.Instant) {
        var httpRequest = HTTPClientRequest(url: baseURL + request.path)
        httpRequest.method = .POST
        for (name, value) in request.headers { httpRequest.headers.add(name: name, value: value) }
        httpRequest.body = .stream(stream, length: .known(Int64(request.body.count)))
        do {
            let response = try await http.client.execute(httpRequest, timeout: .seconds(60))
            let body = try await response.body.collect(upTo: 1 << 20)
            let answer = FaultHTTP.Answer(status: Int(response.status.code), body: String(buffer: body))
            return (.answered(status: answer.status, code: answer.errorCode), .now)
        } catch {
            return (.failed(String(describing: error)), .now)
        }
    }

    /// Sends the second half and ends the body.
    func finish() {
        continuation.yield(ByteBuffer(bytes: request.body.dropFirst(request.body.count / 2)))
        continuation.finish()
    }

    /// Ends the stream without the rest (clean-up of a body that will never complete).
    func abandon() { continuation.finish() }
}
