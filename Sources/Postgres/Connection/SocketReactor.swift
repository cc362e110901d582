import CLibPQ
import Foundation
import Synchronization

/// One thread, for the whole process, that waits with epoll for libpq's sockets to have an answer.
///
/// A query no longer occupies a thread while the server works: the task sends it without blocking
/// (`PQsendQueryPrepared` on a non-blocking connection, `ConnectionDriver`), and this thread reads the
/// answer when the socket becomes readable (`PQconsumeInput`, `PQgetResult`) and resumes the task.
/// Before, every query went to a pool thread that blocked in libpq: two thread hand-offs, a `poll`
/// and a wake-up per query. One thread serves every pool; it only reads what has arrived, so a
/// hung server holds nothing but its own connection's registration. What a ready socket means is the
/// connection's state machine's to decide (`ConnectionDriver.socketReady`); this thread only runs what it
/// says, and never a call that blocks (an abandoned connection's `PQfinish` goes to the pool's threads).
///
/// Sockets are registered level-triggered (`EPOLLIN`) on a connection's first query and stay
/// registered. When one becomes readable with no query waiting (the server hung up on an idle
/// connection, or a blocking operation on the pool's threads got its answer), it is removed, so it
/// cannot wake the loop again; the next query registers it anew.
final class SocketReactor: Sendable {
    /// Created on first use and never stopped: a process has one, like NIO's singletons.
    static let shared = SocketReactor()

    /// The reactor thread's name.
    static let threadName = "libpq-reactor"

    private let epoll: Int32
    private let registrations = Mutex<[UInt64: ConnectionDriver]>([:])
    private let tokens = Atomic<UInt64>(1)

    private init() {
        epoll = clibpq_epoll_create()
        precondition(epoll >= 0, "epoll_create1 failed: errno \(errno)")
        let thread = Thread { [self] in
            // Named from inside (Linux applies a name set before start to nothing) and within the kernel's
            // 15 bytes, so that `top -H`, perf and the tests can tell it apart.
            Thread.current.name = Self.threadName
            loop()
        }
        thread.start()
    }

    func makeToken() -> UInt64 { tokens.wrappingAdd(1, ordering: .relaxed).newValue }

    /// Starts watching `fd` for `driver`; false (errno set) when epoll refuses.
    func add(_ fd: Int32, token: UInt64, driver: ConnectionDriver) -> Bool {
        registrations.withLock { $0[token] = driver }
        guard clibpq_epoll_control(epoll, CLIBPQ_EPOLL_CTL_ADD, fd, token, CLIBPQ_EPOLLIN) == 0 else {
            registrations.withLock { _ = $0.removeValue(forKey: token) }
            return false
        }
        return true
    }

    /// Also waits for `fd` to be writable (a send libpq could not finish), or stops doing so.
    func watch(_ fd: Int32, token: UInt64, writable: Bool) -> Bool {
        let events = writable ? CLIBPQ_EPOLLIN | CLIBPQ_EPOLLOUT : CLIBPQ_EPOLLIN
        return clibpq_epoll_control(epoll, CLIBPQ_EPOLL_CTL_MOD, fd, token, events) == 0
    }

    /// Stops watching `fd`. Events already taken from epoll for `token` find no registration.
    func remove(_ fd: Int32, token: UInt64) {
        _ = clibpq_epoll_control(epoll, CLIBPQ_EPOLL_CTL_DEL, fd, 0, 0)
        registrations.withLock { _ = $0.removeValue(forKey: token) }
    }

    private func loop() {
        let capacity = 64
        var tokens = [UInt64](repeating: 0, count: capacity)
        var events = [UInt32](repeating: 0, count: capacity)
        while true {
            let count = tokens.withUnsafeMutableBufferPointer { tokens in
                events.withUnsafeMutableBufferPointer { events in
                    clibpq_epoll_wait(epoll, tokens.baseAddress, events.baseAddress, Int32(capacity), -1)
                }
            }
            guard count > 0 else { continue }  // EINTR
            for index in 0..<Int(count) {
                let token = tokens[index]
                guard let driver = registrations.withLock({ $0[token] }) else { continue }
                driver.socketReady(events: events[index])
            }
        }
    }
}
