import Glibc

/// Connections that send the start of a request and never finish its head: what a slow-loris client
/// holds open. Plain sockets, so that thousands cost the test nothing but file descriptors.
public final class HalfOpenConnections {
    public private(set) var descriptors: [Int32] = []

    /// Opens `count` connections to `host:port` (an IPv4 address) and writes `partial` on each; stops
    /// early (keeping what it opened) when a connect fails, e.g. at the process's descriptor limit.
    public init(
        count: Int, host: String = "127.0.0.1", port: Int, partial: String = "GET /healthz HTTP/1.1\r\nHost: x\r\n"
    )
        throws
    {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw HalfOpenError("bad address \(host)") }
        let bytes = Array(partial.utf8)
        for _ in 0..<count {
            // Close-on-exec: the processes the tests spawn meanwhile (servers, PostgreSQL) must not inherit thousands.
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard descriptor >= 0 else { break }
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else {
                Glibc.close(descriptor)
                break
            }
            _ = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            descriptors.append(descriptor)
        }
    }

    /// How many of them the server has not closed: a peek that would block means open; end of stream or
    /// an error (reset) means closed.
    public var openCount: Int {
        var buffer: UInt8 = 0
        return descriptors.count { descriptor in
            let read = recv(descriptor, &buffer, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
            return read < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
        }
    }

    public func close() {
        for descriptor in descriptors { Glibc.close(descriptor) }
        descriptors = []
    }

    deinit { close() }
}

public struct HalfOpenError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
