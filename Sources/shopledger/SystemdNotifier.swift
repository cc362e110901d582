import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// systemd's readiness protocol (`sd_notify(3)`, unit `Type=notify`) without libsystemd: one datagram per
/// state change, `READY=1` once `serve` answers requests and `STOPPING=1` when it begins to stop, sent to
/// the `AF_UNIX` datagram socket systemd names in `$NOTIFY_SOCKET` (a path, or `@name` in the abstract
/// namespace). With the shipped unit, `systemctl start` returns only after `READY=1`, so a `curl /readyz`
/// right after it finds the server listening.
struct SystemdNotifier: Sendable {
    /// `$NOTIFY_SOCKET` as systemd set it.
    let socketName: String

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// nil when `$NOTIFY_SOCKET` is unset or empty: not started by systemd as `Type=notify` (a shell, a test,
    /// `Type=exec`), where nothing is to be told.
    init?(environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let name = environment["NOTIFY_SOCKET"], !name.isEmpty else { return nil }
        socketName = name
    }

    /// Sends `state` (lines of `NAME=value`, such as `READY=1\nSTATUS=…`) as one datagram.
    func notify(_ state: String) throws(Failure) {
        // `@name`: the abstract namespace, the name after a NUL byte; otherwise a file system path.
        let abstract = socketName.hasPrefix("@")
        var name = Array(socketName.utf8)
        if abstract { name[0] = 0 }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard socketName.hasPrefix("/") || abstract, name.count < capacity else {
            throw Failure(
                description:
                    "NOTIFY_SOCKET \(socketName): not an absolute path or @name of at most \(capacity - 1) bytes")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            path.copyBytes(from: name)
        }
        // A path's length counts its terminating NUL (sun_path was zeroed); an abstract name's does not.
        let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + name.count + (abstract ? 0 : 1)
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "NOTIFY_SOCKET: socket(): \(Self.errorText())") }
        defer { close(descriptor) }
        let bytes = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bytes.withUnsafeBytes { buffer in
                    sendto(
                        descriptor, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), socketAddress,
                        socklen_t(length))
                }
            }
        }
        guard sent == bytes.count else {
            throw Failure(description: "NOTIFY_SOCKET \(socketName): sendto(): \(Self.errorText())")
        }
    }

    private static func errorText() -> String {
        String(cString: strerror(errno))
    }
}
