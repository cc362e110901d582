import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// The few requests `smoke` makes, each bounded by the command's `--timeout`. An answer is its status
/// and its body parsed as JSON when it is JSON (nil otherwise).
struct SmokeHTTP: Sendable {
    struct Answer: Sendable {
        let status: Int
        let text: String

        var object: [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
        }

        /// The `{"error": {"code"}}` of a JSON error answer.
        var errorCode: String? { (object?["error"] as? [String: Any])?["code"] as? String }

        /// Status and a short body, for a check's detail.
        var summary: String {
            let body = text.count > 160 ? String(text.prefix(160)) + "…" : text
            return "\(status) \(body.replacingOccurrences(of: "\n", with: " "))"
        }
    }

    let baseURL: String
    let timeout: TimeAmount

    init(baseURL: String, timeout: Duration) {
        self.baseURL = baseURL
        let (seconds, attoseconds) = timeout.components
        self.timeout = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    func get(_ path: String, token: String? = nil) async throws -> Answer {
        try await send(.GET, path, body: nil, token: token)
    }

    func post(_ path: String, json: [String: Any]?, token: String? = nil) async throws -> Answer {
        let body = try json.map { try JSONSerialization.data(withJSONObject: $0) }
        return try await send(.POST, path, body: body, token: token)
    }

    private func send(_ method: HTTPMethod, _ path: String, body: Data?, token: String?) async throws -> Answer {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "shopledger-smoke")
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: timeout)
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return Answer(status: Int(response.status.code), text: String(buffer: bytes))
    }
}
