import Foundation
import HTTPTypes
import Hummingbird

/// An error answer of the JSON surface: `{"error": {"code": "<machine_readable>", "message": "..."}}`
/// with a fitting status. Every error the JSON surface answers with is one of these (see
/// ``ErrorMapping``).
public struct APIError: Error, HTTPResponseError, Sendable, CustomStringConvertible {
    public let status: HTTPResponse.Status
    /// A stable snake_case code for programs.
    public let code: String
    /// A sentence for people; never contains secrets.
    public let message: String
    public var headers: HTTPFields

    public init(_ status: HTTPResponse.Status, code: String, message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public var description: String { "\(status.code) \(code): \(message)" }

    struct Body: Encodable {
        struct Detail: Encodable {
            let code: String
            let message: String
        }
        let error: Detail
    }

    /// The error body as JSON bytes.
    var jsonBody: Data {
        // Encoding two strings cannot fail.
        (try? JSONEncoder().encode(Body(error: .init(code: code, message: message)))) ?? Data("{}".utf8)
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = self.headers
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: jsonBody)))
    }
}

/// Bad request input: a missing or invalid field, a body that is not what the content type says, a
/// content type the endpoint does not take. The JSON surface answers `status` (400 or 415), the SeSAC
/// surface 501 ("client error").
package struct InputError: Error, Sendable, CustomStringConvertible {
    let status: HTTPResponse.Status
    package let code: String
    package let message: String

    init(_ code: String, _ message: String, status: HTTPResponse.Status = .badRequest) {
        self.status = status
        self.code = code
        self.message = message
    }

    package var description: String { "\(code): \(message)" }

    static func missingField(_ name: String) -> InputError {
        InputError("missing_field", "the field \(name) is required")
    }

    static func unsupportedMediaType(_ expected: String) -> InputError {
        InputError("unsupported_media_type", "the body must be \(expected)", status: .unsupportedMediaType)
    }
}

/// The request took longer than the configured timeout; its work was cancelled.
struct RequestTimeoutError: Error, Sendable, CustomStringConvertible {
    let timeout: Duration
    var description: String { "the request did not finish within \(timeout)" }
}
