#if canImport(Glibc)
import Foundation
import CNIOLinux
import Glibc
import Synchronization

/// One thread that waits on the sockets of all of a client's connections at once (epoll) and
/// resumes the task waiting on each when it becomes readable or writable.
///
/// Why: a query used to hop from a cooperative thread to a pool thread, which sent it and blocked
/// in libpq until the answer came, then hop back: two thread hand-offs per call. With the
/// connection in libpq's non-blocking mode, the cooperative thread sends the query itself (libpq
/// only copies it into the socket buffer, never waits), parks its task here, and reads the answer
/// when resumed: one hand-off, and under load one wake-up of this thread serves several sockets.
final class SocketReactor: Sendable {
    enum Interest: Sendable { case readable, writable }

    private struct State {
        var waiters: [Int32: UnsafeContinuation<Void, any Error>] = [:]
        /// Sockets added to the epoll set (ADD once, then MOD to re-arm the one-shot interest).
        var registered: Set<Int32> = []
        var stopped = false
        var stopRequested = false
    }

    private let epoll: Int32
    /// An eventfd in the epoll set; writing to it stops the thread.
    private let wakeup: Int32
    private let state = Mutex(State())

    init() throws(PostgresError) {
        let epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        let wakeup = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard epoll >= 0, wakeup >= 0 else {
            if epoll >= 0 { close(epoll) }
            if wakeup >= 0 { close(wakeup) }
            throw PostgresError(code: .unexpectedResponse, message: "could not create the socket reactor: errno \(errno)")
        }
        self.epoll = epoll
        self.wakeup = wakeup
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = wakeup
        _ = epoll_ctl(epoll, EPOLL_CTL_ADD, wakeup, &event)
        let thread = Thread { [self] in loop() }
        thread.name = "postgres-reactor"
        thread.start()
    }

    /// Suspends the calling task until `socket` is readable (or writable). Fails when the reactor
    /// has stopped or the socket cannot be watched.
    func wait(_ socket: Int32, for interest: Interest) async throws {
        try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
            let failure = state.withLock { state -> String? in
                guard !state.stopped else { return "the database client has shut down" }
                // The waiter is in place before the socket is armed, so the event cannot miss it.
                state.waiters[socket] = continuation
                let error = arm(socket, for: interest, known: state.registered.contains(socket))
                guard error == 0 else {
                    state.waiters[socket] = nil
                    return "cannot watch the connection's socket (errno \(error))"
                }
                state.registered.insert(socket)
                return nil
            }
            if let failure { continuation.resume(throwing: PostgresError(code: .connectionClosed, message: failure)) }
        }
    }

    /// Adds the socket to the epoll set, or re-arms it (one-shot interests are disabled once they
    /// fire). A closed socket leaves the set by itself, so a number seen before may be new (MOD
    /// fails with ENOENT) and one never seen may linger from a twin (ADD fails with EEXIST).
    /// Returns 0 or the errno.
    private func arm(_ socket: Int32, for interest: Interest, known: Bool) -> Int32 {
        var event = epoll_event()
        event.events = (interest == .readable ? EPOLLIN.rawValue : EPOLLOUT.rawValue) | EPOLLONESHOT.rawValue
        event.data.fd = socket
        if epoll_ctl(epoll, known ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, socket, &event) == 0 { return 0 }
        let first = errno
        guard first == (known ? ENOENT : EEXIST) else { return first }
        return epoll_ctl(epoll, known ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, socket, &event) == 0 ? 0 : errno
    }

    /// Stops the thread; waiting tasks fail. Idempotent: the eventfd is written once, before the
    /// thread can have closed it.
    func shutdown() {
        let first = state.withLock { state in
            defer { state.stopRequested = true }
            return !state.stopRequested
        }
        guard first else { return }
        _ = eventfd_write(wakeup, 1)
    }

    private func loop() {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        var ready: [UnsafeContinuation<Void, any Error>] = []
        while true {
            let count = events.withUnsafeMutableBufferPointer { epoll_wait(epoll, $0.baseAddress, Int32($0.count), -1) }
            if count < 0 {
                if errno == EINTR { continue }
                break
            }
            ready.removeAll(keepingCapacity: true)
            var stop = false
            state.withLock { state in
                for index in 0..<Int(count) {
                    let socket = events[index].data.fd
                    if socket == wakeup {
                        stop = true
                    } else if let waiter = state.waiters.removeValue(forKey: socket) {
                        ready.append(waiter)
                    }
                }
                if stop { state.stopped = true }
            }
            for waiter in ready { waiter.resume() }
            if stop { break }
        }
        let left = state.withLock { state in
            state.stopped = true
            state.stopRequested = true  // the eventfd is about to close: never write to it again
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in left { waiter.resume(throwing: PostgresError(code: .poolClosed, message: "the database client has shut down")) }
        close(epoll)
        close(wakeup)
    }
}
#endif
