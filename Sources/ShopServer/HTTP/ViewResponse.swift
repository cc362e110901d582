import APIViews
import Hummingbird
import NIOCore

/// A view (APIViews) answered in its one encoding (`ViewJSON`), the bytes `--json` prints for the same
/// object, rather than in the router's default encoding.
struct ViewResponse<View: Encodable & Sendable>: ResponseGenerator, Sendable {
    let view: View

    init(_ view: View) {
        self.view = view
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: try ViewJSON.data(view))))
    }
}
