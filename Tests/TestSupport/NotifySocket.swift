import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What systemd listens on for a `Type=notify` service: an `AF_UNIX` datagram socket, bound at a path in
/// the file system or at a name in the abstract namespace, whose address the service gets as
/// `$NOTIFY_SOCKET`. Each datagram is one notification (`READY=1`, `STOPPING=1`, ...).
public final class NotifySocket: Sendable {
    /// The value for `NOTIFY_SOCKET`: the path, or `@name`.
    public let address: String
    private let descriptor: Int32
    private let path: String?

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Binds a socket at `path` (a file, removed on `close()`), or with `abstractName` in the abstract namespace.
    public init(path: String? = nil, abstractName: String? = nil) throws {
        precondition((path == nil) != (abstractName == nil), "a path or an abstract name")
        var name = Array((path ?? "@" + abstractName!).utf8)
        if path == nil { name[0] = 0 }
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        guard name.count < MemoryLayout.size(ofValue: socketAddress.sun_path) else {
            throw Failure(description: "\(path ?? abstractName!): too long for a unix socket address")
        }
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { $0.copyBytes(from: name) }
        let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + name.count + (path == nil ? 0 : 1)
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket(): \(String(cString: strerror(errno)))") }
        let bound = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(length)) }
        }
        guard bound == 0 else {
            let error = String(cString: strerror(errno))
            Glibc.close(descriptor)
            throw Failure(description: "bind(\(path ?? "@" + abstractName!)): \(error)")
        }
        self.descriptor = descriptor
        self.path = path
        self.address = path ?? "@" + abstractName!
    }

    /// The next datagram, or nil when none arrives within `timeout`.
    public func receive(timeout: Duration) -> String? {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(
            timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        guard poll(&poller, 1, milliseconds) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        guard count >= 0 else { return nil }
        return String(decoding: buffer.prefix(count), as: UTF8.self)
    }

    /// Closes the socket and removes its file.
    public func close() {
        Glibc.close(descriptor)
        if let path { unlink(path) }
    }
}
