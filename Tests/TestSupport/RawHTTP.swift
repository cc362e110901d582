import Dispatch
import Foundation
import Glibc

/// One request written on a fresh plain socket to 127.0.0.1, and what came back: until the answer's body
/// (by its `Content-Length`) is in, the server closed the connection, or 5 s passed without a byte. The
/// socket work blocks, so it runs on a dispatch thread, outside the cooperative threads a server in the
/// same process uses.
public enum RawHTTP {
    public static func exchange(port: Int, _ request: String) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try blockingExchange(port: port, request) })
            }
        }
    }

    private static func blockingExchange(port: Int, _ request: String) throws -> String {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw HalfOpenError("socket: \(errno)") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw HalfOpenError("connect: \(errno)") }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let bytes = Array(request.utf8)
        _ = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let read = recv(descriptor, &buffer, buffer.count, 0)
            guard read > 0 else { break }
            answer += buffer[0..<read]
            // The head and a short body are enough to judge; a kept-alive connection would not close.
            if let text = String(bytes: answer, encoding: .utf8), let end = text.range(of: "\r\n\r\n"),
                text[end.upperBound...].count >= contentLength(text)
            {
                break
            }
        }
        return String(decoding: answer, as: UTF8.self)
    }

    private static func contentLength(_ head: String) -> Int {
        for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
            return Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        return 0
    }
}
