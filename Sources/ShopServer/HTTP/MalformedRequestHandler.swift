import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// Answers what HTTP cannot parse between requests: a request head over
/// ``ServerConfiguration/maxHeaderBytes`` (431 `request_header_fields_too_large`) or bytes that are not an
/// HTTP request (400 `malformed_http`). Such a request never reaches the router, so without this the
/// client got Hummingbird's bare 400 with no body and no request id, and the operator no log line.
/// Here it gets a JSON error body and `x-request-id`; the log gets a `request` line with that id (the
/// same key as every request line) and the metrics count it under the route `unparsed`.
///
/// One per connection, after the HTTP codec. A parse error inside a request (a broken chunk in a body
/// the route is reading) is left to the responder, which answers it in its surface's way.
final class MalformedRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    private let logger: Logger
    private let metrics: ShopMetrics
    /// A request's head has arrived and its end not yet.
    private var inRequest = false
    private var answered = false

    init(logger: Logger, metrics: ShopMetrics) {
        self.logger = logger
        self.metrics = metrics
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answered else { return }
        switch unwrapInboundIn(data) {
        case .head: inRequest = true
        case .body: break
        case .end: inRequest = false
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parseError = error as? HTTPParserError, !inRequest, !answered else {
            context.fireErrorCaught(error)
            return
        }
        answered = true
        let (status, code, message) = Self.answer(for: parseError)
        let id = RequestID().description
        let body = APIError(status, code: code, message: message).jsonBody
        var fields: HTTPFields = [
            .contentType: "application/json; charset=utf-8", .contentLength: String(body.count),
            .connection: "close",
        ]
        fields[HTTPField.Name("x-request-id")!] = id
        context.write(wrapOutboundOut(.head(HTTPResponse(status: status, headerFields: fields))), promise: nil)
        context.write(wrapOutboundOut(.body(ByteBuffer(bytes: body))), promise: nil)
        // Close our side only once the answer is out, and keep reading (and dropping) what the client still
        // sends: closing with its bytes unread would reset the connection, and a reset can destroy the
        // answer before the client reads it. The client's close, or the idle timeout, ends the connection.
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            context.close(mode: .output, promise: nil)
        }
        metrics.recordRequest(route: "unparsed", method: "other", status: Int(status.code), duration: .zero)
        logger.info(
            "request",
            metadata: [
                "hb.request.id": .string(id), "client": .string(context.remoteAddress?.ipAddress ?? "unknown"),
                "status": .stringConvertible(status.code), "error": .string("\(parseError)"),
            ])
    }

    static func answer(for error: HTTPParserError) -> (HTTPResponse.Status, String, String) {
        switch error {
        case .headerOverflow:
            return (
                .requestHeaderFieldsTooLarge, "request_header_fields_too_large",
                "the request's header fields are over the \(ServerConfiguration.maxHeaderBytes)-byte limit"
            )
        default:
            return (.badRequest, "malformed_http", "the request is not valid HTTP: \(error)")
        }
    }
}

@available(*, unavailable)
extension MalformedRequestHandler: Sendable {}
