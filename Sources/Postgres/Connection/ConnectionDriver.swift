import CLibPQ
import Dispatch
import Synchronization

/// The I/O around one connection's `ConnectionStateMachine`: it holds the machine behind a lock, feeds
/// it events (a task sends or runs a job, the reactor reports the socket ready, a cancel, the grace
/// timer, close) and runs the actions it returns. It decides nothing itself.
///
/// The `PGconn *` belongs to the driver from connect to `PQfinish`, which only a close action calls.
/// libpq is never called from two threads at once: the task sends under the lock and the reactor reads
/// under it, and between steps the leasing task alone calls libpq (blocking work on the pool's threads
/// included). Blocking calls (`PQfinish` of an abandoned connection, `PQcancel`) never run on the
/// reactor thread: they go to the pool's threads and the cancel threads.
final class ConnectionDriver: Sendable {
    typealias Waiter = UnsafeContinuation<ConnectionOutcome<OpaquePointer>, Never>
    typealias Machine = ConnectionStateMachine<Waiter, OpaquePointer>

    private struct Storage {
        var machine: Machine
        /// The connection and its cancel object, once connected.
        var handles = Handles()
        /// The socket the reactor watches, once it does.
        var socket: Int32 = -1
    }

    private let storage: Mutex<Storage>
    private let reactor: SocketReactor
    private let token: UInt64
    private let executor: BlockingExecutor
    let cancelGrace: Duration
    /// Called on the pool's threads once an abandoned connection is closed: its slot is free.
    private let reclaimed: @Sendable () -> Void

    init(
        executor: BlockingExecutor, cancelGrace: Duration, reactor: SocketReactor = .shared,
        reclaimed: @escaping @Sendable () -> Void = {}
    ) {
        self.storage = Mutex(Storage(machine: Machine(cancelGrace: cancelGrace)))
        self.reactor = reactor
        self.token = reactor.makeToken()
        self.executor = executor
        self.cancelGrace = cancelGrace
        self.reclaimed = reclaimed
    }

    /// Takes ownership of a freshly opened connection (from now on only a close action finishes it).
    func attach(_ handle: OpaquePointer) {
        let cancelHandle = PQgetCancel(handle)
        storage.withLock { $0.handles = Handles(connection: handle, cancel: cancelHandle) }
    }

    // MARK: Reading the state

    var isAbandoned: Bool { storage.withLock { $0.machine.isAbandoned } }
    var isClosed: Bool { storage.withLock { $0.machine.isClosed } }
    /// True when the pool must discard the connection: a cancel request failed, it was abandoned or closed.
    var isCondemned: Bool { storage.withLock { !$0.machine.isUsable } }
    var isCancelRequested: Bool { storage.withLock { $0.machine.isCancelRequested } }

    enum Liveness { case unusable, watchedAndQuiet, unknown }

    /// For a lease's liveness check, in one look: unusable (condemned, abandoned, closed), known alive
    /// without a system call (`ConnectionStateMachine.isWatchedAndQuiet`), or to be asked of the socket.
    var liveness: Liveness {
        storage.withLock { storage in
            guard storage.machine.isUsable else { return .unusable }
            return storage.machine.isWatchedAndQuiet ? .watchedAndQuiet : .unknown
        }
    }

    // MARK: Operations

    /// Runs `body` as one operation: a cancel of the awaiting task cancels what it runs on the server.
    func operation<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        let id = try storage.withLock { try $0.machine.startOperation().get() }
        defer { update { $0.machine.endOperation(id) } }
        return try await withTaskCancellationHandler {
            try await body()
        } onCancel: {
            update { $0.machine.cancel(id) }
        }
    }

    /// Sends with `send` (a `PQsend…` call) and waits, on no thread, for the server's answer. Inside an operation.
    func roundTrip(_ send: (OpaquePointer) -> Int32) async -> ConnectionOutcome<OpaquePointer> {
        await withUnsafeContinuation { continuation in
            update { storage in start(&storage, continuation, send) }
        }
    }

    /// Sends under the lock, so the reactor cannot read before the send has ended. (Sending outside it,
    /// with the reactor only noting events meanwhile, was measured slower: a sender preempted in
    /// `send(2)` left the level-triggered reactor spinning on the answer's readiness until it ran again.)
    private func start(_ storage: inout Storage, _ waiter: Waiter, _ send: (OpaquePointer) -> Int32) -> Machine.Actions
    {
        if case .refuse(let outcome) = storage.machine.startRoundTrip(waiter) {
            return Machine.Actions(resume: (waiter, outcome))
        }
        guard let handle = storage.handles.connection else { return storage.machine.ioFailed() }
        if storage.machine.needsWatch {
            let fd = PQsocket(handle)
            guard fd >= 0, reactor.add(fd, token: token, driver: self) else { return storage.machine.ioFailed() }
            storage.socket = fd
            storage.machine.watchAdded()
        }
        PQsetnonblocking(handle, 1)
        guard send(handle) == 1 else { return storage.machine.ioFailed() }
        let flushed = PQflush(handle)
        if flushed < 0 { return storage.machine.ioFailed() }
        return storage.machine.sent(complete: flushed == 0)
    }

    /// The reactor thread: the socket is readable (or writable, or hung up).
    func socketReady(events: UInt32) {
        update { storage in
            let readable = events & (CLIBPQ_EPOLLIN | CLIBPQ_EPOLLHUP | CLIBPQ_EPOLLERR) != 0
            switch storage.machine.socketReady(readable: readable) {
            case .ignore:
                return .none
            case .stopWatching(let actions):
                return actions
            case .progress(let flush, let read):
                guard let handle = storage.handles.connection else { return storage.machine.ioFailed() }
                return progress(&storage, handle, flush: flush, read: read)
            }
        }
    }

    /// Sends what is left to send, reads what has arrived, and takes every complete result.
    private func progress(_ storage: inout Storage, _ handle: OpaquePointer, flush: Bool, read: Bool) -> Machine.Actions
    {
        var flushed = true
        if flush {
            let left = PQflush(handle)
            if left < 0 { return storage.machine.ioFailed() }
            flushed = left == 0
        }
        guard read else { return storage.machine.progressed(results: [], flushed: flushed, done: false) }
        guard PQconsumeInput(handle) == 1 else { return storage.machine.ioFailed() }
        var results: [OpaquePointer] = []
        var done = false
        while PQisBusy(handle) == 0 {
            guard let result = PQgetResult(handle) else {
                done = true
                break
            }
            results.append(result)
            // libpq would hand out a COPY result for ever: the caller ends the COPY.
            let status = PQresultStatus(result)
            if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH {
                done = true
                break
            }
        }
        // Between round trips the connection blocks again (COPY, scripts and ROLLBACK on the pool's threads).
        if done { PQsetnonblocking(handle, 0) }
        return storage.machine.progressed(results: results, flushed: flushed, done: done)
    }

    // MARK: Blocking jobs

    /// Runs `body`, a blocking libpq call, on the pool's threads as one operation. A cancelled caller
    /// waits at most `cancelGrace` for it (with `cancelOnServer`, after asking the server to stop); then
    /// it is resumed with `.queryCancelled` and the connection is closed when the job returns.
    func job<T: Sendable>(
        cancelOnServer: Bool, refuseIfCancelled: Bool = true, _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try await operation {
            try await runJob(cancelOnServer: cancelOnServer, refuseIfCancelled: refuseIfCancelled, body)
        }
    }

    private func runJob<T: Sendable>(
        cancelOnServer: Bool, refuseIfCancelled: Bool, _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        let value = JobValue<T>()
        let outcome = await withUnsafeContinuation { continuation in
            var submit = false
            update { storage in
                switch storage.machine.startJob(
                    continuation, cancelOnServer: cancelOnServer, refuseIfCancelled: refuseIfCancelled)
                {
                case .refuse(let outcome): return Machine.Actions(resume: (continuation, outcome))
                case .send:
                    submit = true
                    return .none
                }
            }
            guard submit else { return }
            executor.submitJob { [self] active in
                let result = active ? Swift.Result(catching: body) : .failure(BlockingExecutor.shutDownError)
                value.result.withLock { $0 = result }
                update { $0.machine.jobReturned() }
            }
        }
        switch outcome {
        case .jobReturned:
            guard let result = value.result.withLock({ $0.take() }) else { throw BlockingExecutor.shutDownError }
            return try result.get()
        case .refused(let error):
            throw error
        case .failed, .results:
            throw PostgresError(code: .connectionClosed, message: "the connection is closed")
        }
    }

    // MARK: Close

    /// Closes the connection; a second close does nothing. Not on the reactor thread (`PQfinish`).
    func close() {
        update { $0.machine.close() }
    }

    // MARK: Running actions

    /// Feeds one event to the machine under the lock, makes its reactor change there (a failed one is an
    /// I/O failure, fed back), then runs the rest of its actions once the lock is released.
    private func update(_ event: (inout Storage) -> Machine.Actions) {
        let (actions, handles) = storage.withLock { storage -> (Machine.Actions, Handles) in
            var actions = event(&storage)
            if let watch = actions.watch, !apply(watch, &storage) {
                let failure = storage.machine.ioFailed()
                if let change = failure.watch { _ = apply(change, &storage) }
                actions.clear += failure.clear
                actions.close = actions.close ?? failure.close
                actions.resume = actions.resume ?? failure.resume
            }
            return (actions, storage.handles)
        }
        run(actions, handles)
    }

    private func apply(_ change: Machine.WatchChange, _ storage: inout Storage) -> Bool {
        switch change {
        case .writable(let writable):
            return reactor.watch(storage.socket, token: token, writable: writable)
        case .remove:
            if storage.socket >= 0 { reactor.remove(storage.socket, token: token) }
            storage.socket = -1
            return true
        }
    }

    private func run(_ actions: Machine.Actions, _ handles: Handles) {
        for result in actions.clear { PQclear(result) }
        if let close = actions.close {
            let freeCancelHandle = close.freeCancelHandle
            if close.reclaim {
                // An abandoned connection: whatever thread found it done, `PQfinish` goes to the pool's threads.
                executor.submit { [reclaimed] in
                    handles.finish(freeCancelHandle: freeCancelHandle)
                    reclaimed()
                }
            } else {
                handles.finish(freeCancelHandle: close.freeCancelHandle)
            }
        }
        if actions.freeCancelHandle, let cancel = handles.cancel { PQfreeCancel(cancel) }
        if actions.sendCancelRequest { executor.submitCancel { [self] in sendCancelRequest() } }
        if let id = actions.startGraceTimer {
            DispatchQueue.global().asyncAfter(deadline: .after(cancelGrace)) { [self] in
                update { $0.machine.graceExpired(id) }
            }
        }
        if let (waiter, outcome) = actions.resume { waiter.resume(returning: outcome) }
    }

    /// Asks the server to cancel (blocking: it opens a short connection of its own, which on a hung
    /// server can block for as long as the server is hung; on the cancel threads). A request libpq
    /// could not send condemns the connection.
    private func sendCancelRequest() {
        let cancel = storage.withLock { storage -> Handles? in
            storage.machine.cancelRequestStarting() ? storage.handles : nil
        }
        guard let cancel else { return }
        var sent = true
        if let cancelHandle = cancel.cancel {
            var buffer = [CChar](repeating: 0, count: 256)
            sent = PQcancel(cancelHandle, &buffer, Int32(buffer.count)) == 1
        }
        update { $0.machine.cancelRequestFinished(sent: sent) }
    }
}

/// What a blocking job returned, from its thread to the task that waits for it.
private final class JobValue<T: Sendable>: Sendable {
    let result = Mutex<Swift.Result<T, any Error>?>(nil)
}

/// The `PGconn *` and its `PGcancel *`. `@unchecked Sendable`: they are only passed to the thread that
/// frees them, which the state machine lets happen once (`Close`, `freeCancelHandle`), after everything
/// else that uses them has ended.
private struct Handles: @unchecked Sendable {
    var connection: OpaquePointer?
    var cancel: OpaquePointer?

    func finish(freeCancelHandle: Bool) {
        if freeCancelHandle, let cancel { PQfreeCancel(cancel) }
        if let connection { PQfinish(connection) }
    }
}

/// `@unchecked Sendable`: results and continuations pass from the thread that took them to the one task
/// that waits for them, and nothing else keeps them.
extension ConnectionOutcome: @unchecked Sendable {}
extension ConnectionStateMachine.Actions: @unchecked Sendable {}

extension DispatchTime {
    /// Now plus `duration` (a negative one is now).
    static func after(_ duration: Duration) -> DispatchTime {
        let (seconds, attoseconds) = duration.components
        return .now() + .nanoseconds(max(0, Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)))
    }
}
