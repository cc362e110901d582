import Foundation
import HTTPTypes
import Hummingbird

/// An answer of the SeSAC-compatible surface. Its clients read only the status code (the contract);
/// the body is a small `{"message": ...}` for people reading logs and proxies.
struct SeSACReply: ResponseGenerator, Sendable {
    let status: HTTPResponse.Status
    let message: String
    var headers: HTTPFields = [:]

    init(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.message = message
        self.headers = headers
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = (try? JSONEncoder().encode(["message": message])) ?? Data("{}".utf8)
        var headers = self.headers
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}
