import Foundation
import Hummingbird

/// An `application/x-www-form-urlencoded` body, as every console form posts.
struct FormBody: Sendable {
    private(set) var fields: [(String, String)]

    static let limit = 64 * 1024

    init(fields: [(String, String)]) { self.fields = fields }

    /// Reads and parses the request's body (at most 64 KiB; the body stays readable for the route).
    static func read(_ request: inout Request) async throws -> FormBody {
        let buffer = try await request.collectBody(upTo: limit)
        return FormBody(encoded: String(buffer: buffer))
    }

    init(encoded: String) {
        fields = encoded.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (Self.decode(parts[0]), parts.count > 1 ? Self.decode(parts[1]) : "")
        }
    }

    subscript(name: String) -> String? { fields.first { $0.0 == name }?.1 }

    private static func decode(_ part: Substring) -> String {
        let spaced = part.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}
