import CLibPQ
import Synchronization

/// How one round trip on a connection ended, as `RoundTripWaiter` hands it to the awaiting task.
enum RoundTripOutcome: @unchecked Sendable {
    /// Every result the server sent, in order (the caller owns them and clears them).
    case results([OpaquePointer])
    /// libpq could not send or read: the message is in `PQerrorMessage`.
    case failed
    /// The task stopped waiting (its cancel was not answered within the grace).
    case abandoned(PostgresError)
}

/// A connection's side of the reactor: the one round trip in flight and who waits for it.
///
/// The task sends (`start`) and the reactor thread reads (`socketReady`), each under `state`'s
/// lock, so libpq is never called from two threads at once. Between round trips the task owns the
/// connection (blocking work on the pool's threads included) and the reactor does not touch it.
final class RoundTripWaiter: Sendable {
    private enum Phase {
        case idle
        case waiting(UnsafeContinuation<RoundTripOutcome, Never>, results: [OpaquePointer])
        /// The task stopped waiting; the round trip is still read to its end, then `reclaim` runs
        /// (the pool closes the connection and frees its slot), as a blocked thread returning would.
        case abandonedWaiting(results: [OpaquePointer], reclaim: @Sendable () -> Void)
        /// Abandoned between round trips: the operation's own task reclaims it (`takeReclaimDuty`).
        case abandonedIdle(PostgresError)
        case abandonedDone(PostgresError)
        case closed
    }

    private struct State: ~Copyable {
        var phase = Phase.idle
        /// The socket the reactor watches, when it does.
        var registered: Int32?
        var writing = false
    }

    private nonisolated(unsafe) let handle: OpaquePointer
    private let reactor: SocketReactor
    private let token: UInt64
    private let state = Mutex(State())

    init(handle: OpaquePointer, reactor: SocketReactor = .shared) {
        self.handle = handle
        self.reactor = reactor
        self.token = reactor.makeToken()
    }

    /// Sends with `send` (a `PQsend…` call) and waits, on no thread, for the server's answer.
    func roundTrip(_ send: (OpaquePointer) -> Int32) async -> RoundTripOutcome {
        await withUnsafeContinuation { continuation in
            if let outcome = start(continuation, send) { continuation.resume(returning: outcome) }
        }
    }

    /// Sends under the lock, so the reactor cannot read before the send has ended. (Sending outside it,
    /// with the reactor only noting events meanwhile, was measured slower: a sender preempted in
    /// `send(2)` left the level-triggered reactor spinning on the answer's readiness until it ran again.)
    private func start(
        _ continuation: UnsafeContinuation<RoundTripOutcome, Never>, _ send: (OpaquePointer) -> Int32
    ) -> RoundTripOutcome? {
        state.withLock { state -> RoundTripOutcome? in
            switch state.phase {
            case .idle: break
            case .abandonedIdle(let error), .abandonedDone(let error): return .abandoned(error)
            case .waiting, .abandonedWaiting, .closed: return .failed
            }
            let fd = PQsocket(handle)
            guard fd >= 0 else { return .failed }
            if state.registered == nil {
                guard reactor.add(fd, token: token, waiter: self) else { return .failed }
                state.registered = fd
            }
            PQsetnonblocking(handle, 1)
            guard send(handle) == 1 else { return finishFailed(&state) }
            let flushed = PQflush(handle)
            if flushed < 0 { return finishFailed(&state) }
            if flushed > 0 {
                guard reactor.watch(fd, token: token, writable: true) else { return finishFailed(&state) }
                state.writing = true
            }
            state.phase = .waiting(continuation, results: [])
            return nil
        }
    }

    /// The reactor thread: the socket is readable (or writable, or hung up).
    func socketReady(events: UInt32) {
        var resume: (UnsafeContinuation<RoundTripOutcome, Never>, RoundTripOutcome)?
        var reclaim: (@Sendable () -> Void)?
        state.withLock { state in
            switch state.phase {
            case .waiting(let continuation, var results):
                switch progress(&state, events: events, results: &results) {
                case .pending:
                    state.phase = .waiting(continuation, results: results)
                case .done:
                    PQsetnonblocking(handle, 0)
                    state.phase = .idle
                    resume = (continuation, .results(results))
                case .failed:
                    results.forEach { PQclear($0) }
                    resume = (continuation, finishFailed(&state))
                }
            case .abandonedWaiting(var results, let reclaimConnection):
                if case .pending = progress(&state, events: events, results: &results) {
                    state.phase = .abandonedWaiting(results: results, reclaim: reclaimConnection)
                } else {
                    results.forEach { PQclear($0) }
                    unregister(&state)
                    state.phase = .closed
                    reclaim = reclaimConnection
                }
            case .idle, .abandonedIdle, .abandonedDone, .closed:
                // Nobody waits: the server spoke to an idle connection (it is going away; the pool's
                // liveness check will see it), or a blocking job on the pool's threads is reading.
                unregister(&state)
            }
        }
        if let (continuation, outcome) = resume { continuation.resume(returning: outcome) }
        reclaim?()
    }

    private enum Progress { case pending, done, failed }

    /// Sends what is left to send, reads what has arrived, and takes every complete result.
    private func progress(_ state: inout State, events: UInt32, results: inout [OpaquePointer]) -> Progress {
        if state.writing {
            let flushed = PQflush(handle)
            if flushed < 0 { return .failed }
            if flushed == 0 {
                guard let fd = state.registered, reactor.watch(fd, token: token, writable: false) else {
                    return .failed
                }
                state.writing = false
            }
        }
        guard events & (CLIBPQ_EPOLLIN | CLIBPQ_EPOLLHUP | CLIBPQ_EPOLLERR) != 0 else { return .pending }
        guard PQconsumeInput(handle) == 1 else { return .failed }
        while PQisBusy(handle) == 0 {
            guard let result = PQgetResult(handle) else { return .done }
            results.append(result)
            switch PQresultStatus(result) {
            // libpq would hand out a COPY result for ever: the caller ends the COPY.
            case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH: return .done
            default: continue
            }
        }
        return .pending
    }

    private func finishFailed(_ state: inout State) -> RoundTripOutcome {
        unregister(&state)
        state.phase = .idle
        return .failed
    }

    private func unregister(_ state: inout State) {
        guard let fd = state.registered else { return }
        reactor.remove(fd, token: token)
        state.registered = nil
        state.writing = false
    }

    /// The grace after a cancel ran out: the waiting task is resumed with `error` at once. A round
    /// trip in flight is still read to its end on the reactor, then `reclaim` runs; between round
    /// trips, the operation's task reclaims the connection as it unwinds (`takeReclaimDuty`).
    func abandon(with error: PostgresError, reclaim: @escaping @Sendable () -> Void) {
        let continuation = state.withLock { state -> UnsafeContinuation<RoundTripOutcome, Never>? in
            switch state.phase {
            case .waiting(let continuation, let results):
                state.phase = .abandonedWaiting(results: results, reclaim: reclaim)
                return continuation
            case .idle:
                state.phase = .abandonedIdle(error)
                return nil
            default:
                return nil
            }
        }
        continuation?.resume(returning: .abandoned(error))
    }

    /// True once, for the task whose operation was abandoned between round trips: it closes the
    /// connection and frees the slot (nothing else will).
    func takeReclaimDuty() -> Bool {
        state.withLock { state in
            guard case .abandonedIdle(let error) = state.phase else { return false }
            state.phase = .abandonedDone(error)
            return true
        }
    }

    /// Whether the reactor is watching the socket and has seen nothing arrive since the last answer:
    /// then the connection is known alive without a system call (see `PGConnection.isAlive`).
    var isWatchedAndQuiet: Bool {
        state.withLock { state in
            guard case .idle = state.phase else { return false }
            return state.registered != nil
        }
    }

    /// Before `PQfinish`: the reactor forgets the socket.
    func close() {
        state.withLock { state in
            unregister(&state)
            state.phase = .closed
        }
    }
}
