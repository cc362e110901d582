import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

/// An HTTP client for the scenarios (AsyncHTTPClient), always shut down at the end of `with`.
struct FaultHTTP: Sendable {
    let client: HTTPClient

    /// What one request got: an answer, or a transport failure (refused, reset, timed out).
    enum Outcome: Sendable, CustomStringConvertible {
        case answered(status: Int, code: String?)
        case failed(String)

        var status: Int? {
            if case .answered(let status, _) = self { return status }
            return nil
        }

        /// The JSON surface's error code, when the answer had one.
        var code: String? {
            if case .answered(_, let code) = self { return code }
            return nil
        }

        var description: String {
            switch self {
            case .answered(let status, let code): code.map { "\(status) \($0)" } ?? "\(status)"
            case .failed(let error): "transport error: \(error)"
            }
        }
    }

    struct Answer: Sendable {
        let status: Int
        let body: String
        var headers: HTTPHeaders = [:]

        /// The JSON surface's `{"error": {"code"}}`.
        var errorCode: String? {
            let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
            return (object?["error"] as? [String: Any])?["code"] as? String
        }

        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]) ?? [:]
        }
    }

    /// - Parameter certificate: a PEM file: HTTPS trusts this certificate and nothing else (the system's
    ///   roots are not consulted); without it, HTTPS trusts the system's roots.
    /// - Parameter followingRedirects: false to get a redirect as the answer (its `Location` in `headers`).
    static func with<R: Sendable>(
        trustingOnly certificate: String? = nil, followingRedirects: Bool = true, _ body: (FaultHTTP) async throws -> R
    ) async throws -> R {
        var configuration = HTTPClient.Configuration(
            timeout: .init(connect: .seconds(2), read: .seconds(60)),
            connectionPool: .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 64))
        if !followingRedirects { configuration.redirectConfiguration = .disallow }
        configuration.httpVersion = .http1Only
        if let certificate {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(certificate))
            tls.minimumTLSVersion = .tlsv12
            configuration.tlsConfiguration = tls
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            let result = try await body(FaultHTTP(client: client))
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    func send(
        _ method: HTTPMethod, _ url: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
        timeout: TimeAmount = .seconds(30)
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await client.execute(request, timeout: timeout)
        let buffer = try await response.body.collect(upTo: 4 << 20)
        return Answer(status: Int(response.status.code), body: String(buffer: buffer), headers: response.headers)
    }

    /// `send`, with a transport failure as an outcome rather than an error.
    func outcome(
        _ method: HTTPMethod, _ url: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
        timeout: TimeAmount = .seconds(30)
    ) async -> (Outcome, Answer?) {
        do {
            let answer = try await send(method, url, headers: headers, body: body, timeout: timeout)
            return (.answered(status: answer.status, code: answer.errorCode), answer)
        } catch {
            return (.failed(String(describing: error)), nil)
        }
    }
}

/// A plain TCP connect to 127.0.0.1:`port`: true when something accepts it. (Refused is what a
/// stopped or shutting-down server must answer new connections.)
func acceptsConnections(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}
