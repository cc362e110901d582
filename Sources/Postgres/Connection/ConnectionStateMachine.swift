/// How a wait on a connection ended, as the waiting task is resumed with it.
enum ConnectionOutcome<Result> {
    /// Every result the server sent for a round trip, in order (the caller owns them and clears them).
    case results([Result])
    /// libpq could not send or read: the message is in `PQerrorMessage`.
    case failed
    /// A blocking job returned (its value is where the job left it).
    case jobReturned
    /// Refused or given up: cancelled before it was sent, the connection abandoned or closed. Boxed
    /// (`indirect`): the error is large and rare, and every action carries an outcome.
    indirect case refused(PostgresError)
}

/// Everything that happens to one libpq connection, as a state machine in postgres-nio's style: a value
/// type whose methods take an event (a task sends, the socket is readable, a cancel, the grace ran out, a
/// job returned, close) and return what to do; `ConnectionDriver` holds it behind a lock and only runs
/// those actions (libpq calls, the reactor's registrations, resuming tasks, timers, the blocking
/// threads). Generic over who waits (`Waiter`, a continuation) and what a round trip collects
/// (`Result`, a `PGresult *`), so that `ConnectionStateMachineTests` drive every transition with plain
/// values and no server.
///
/// The connection's life: `idle` between leases' operations; one `operation` at a time, which is
/// between steps (the leasing task runs Swift code), in a round trip (sent without blocking; the reactor
/// reads the answer) or in a blocking job (on the pool's threads). A cancel marks the operation, asks the
/// server to stop what it runs, and starts the one grace timer; if the grace runs out first, the task is
/// resumed at once and the connection is `abandoned`: never leased again, and closed (off the reactor)
/// once whatever still runs on it has ended. `closed` is final.
struct ConnectionStateMachine<Waiter, Result> {
    typealias Outcome = ConnectionOutcome<Result>

    /// One round trip's progress: the results so far, and whether libpq still has bytes to send.
    struct RoundTrip {
        var results: [Result] = []
        var writing = false
    }

    enum Step {
        /// The task runs code of its own between round trips or jobs; the server has nothing of ours.
        case between
        /// Sent; the reactor reads the answer (and finishes the send while `writing`).
        case roundTrip(Waiter, RoundTrip)
        /// A blocking libpq call on the pool's threads. `cancelOnServer`: a cancel sends the server a
        /// cancel request (a script, a COPY's start); otherwise only the grace applies (a ROLLBACK, a connect).
        case job(Waiter, cancelOnServer: Bool)
    }

    struct Operation {
        let id: UInt64
        var cancelRequested = false
        var graceTimerStarted = false
        /// A round trip or job in flight when the cancel came has ended since: the server answered (its
        /// 57014, or the result), so the grace has nothing left to cut short.
        var cancelAnswered = false
        var step = Step.between
    }

    /// What still runs on an abandoned connection, and so who closes it.
    enum Abandoned {
        /// A round trip the reactor still reads to its end; then the connection is closed.
        case roundTrip(RoundTrip)
        /// A job still blocked in libpq; closed when it returns.
        case job
        /// Nothing ran (the task was between steps): closed when the task ends its operation.
        case betweenSteps
    }

    enum Phase {
        case idle
        case operation(Operation)
        case abandoned(Abandoned)
        case closed
    }

    /// The reactor's registration of the socket (kept between round trips; removed when the socket
    /// speaks while nobody waits, and on close).
    enum Watch: Equatable {
        case none
        case readable
        case readableAndWritable
    }

    /// A change to a registered socket (the first registration is `needsWatch`/`watchAdded`: it needs
    /// the socket, which the driver reads from libpq).
    enum WatchChange: Equatable {
        case writable(Bool)
        case remove
    }

    struct Close {
        /// Free the `PGcancel` now (no cancel request is using it; else the last one frees it).
        var freeCancelHandle: Bool
        /// An abandoned connection: close it on the pool's threads, then give its slot back.
        var reclaim: Bool
    }

    /// What the driver does after an event, in this order: the watch change (under the lock, before
    /// anything else can happen to the socket), then, once the lock is released, clearing results,
    /// closing, sending a cancel request, starting the grace timer and resuming the waiter.
    struct Actions {
        var watch: WatchChange?
        var clear: [Result] = []
        var close: Close?
        var freeCancelHandle = false
        var sendCancelRequest = false
        var startGraceTimer: UInt64?
        var resume: (waiter: Waiter, outcome: Outcome)?

        static var none: Actions { Actions() }
    }

    enum Start {
        case send
        case refuse(Outcome)
    }

    /// What the driver does when the reactor reports the socket ready.
    enum SocketAction {
        /// A round trip is in flight: finish sending (`flush`), read what arrived (`read`), then report
        /// `progressed` (or `ioFailed`).
        case progress(flush: Bool, read: Bool)
        /// Nobody waits: the server spoke to an idle connection (it is going away; the lease's liveness
        /// check will see it) or a blocking job reads it. Stop watching, so it cannot wake the loop again.
        case stopWatching(Actions)
        case ignore
    }

    private(set) var phase = Phase.idle
    private(set) var watch = Watch.none
    /// Set when a cancel request could not be sent: the pool must not lease this connection again.
    private(set) var isCondemned = false
    private var cancelRequestsSending = 0
    private var cancelHandleFreed = false
    /// A close asked for while a job blocked in libpq: done when it returns.
    private var closeWhenJobReturns = false
    private var nextOperation: UInt64 = 1
    private let cancelGrace: Duration

    init(cancelGrace: Duration) {
        self.cancelGrace = cancelGrace
    }

    // MARK: Queries

    /// Abandoned once (and so, by now, perhaps closed): whoever still holds the lease leaves it alone.
    private(set) var isAbandoned = false

    var isClosed: Bool {
        if case .closed = phase { return true }
        return false
    }

    /// May the pool lease it, may a task start an operation on it.
    var isUsable: Bool {
        switch phase {
        case .idle, .operation: !isCondemned
        case .abandoned, .closed: false
        }
    }

    /// Whether the running operation was asked to cancel (a server's 57014 is then the caller's cancel).
    var isCancelRequested: Bool {
        if case .operation(let operation) = phase { return operation.cancelRequested }
        return false
    }

    /// Between operations with the socket watched: the reactor has seen nothing arrive since the last
    /// answer (it stops watching when something does), so the connection is known alive without a system call.
    var isWatchedAndQuiet: Bool {
        if case .idle = phase { return watch != .none }
        return false
    }

    // MARK: Operations

    /// The leasing task starts an operation (a query, a script, a job); returns its id, which a cancel
    /// and the grace timer name, so that a late one never hits a later operation.
    mutating func startOperation() -> Swift.Result<UInt64, PostgresError> {
        switch phase {
        case .idle where !isCondemned:
            let id = nextOperation
            nextOperation &+= 1
            phase = .operation(Operation(id: id))
            return .success(id)
        case .idle:
            return .failure(Self.closedError)
        case .abandoned:
            return .failure(abandonedError)
        case .operation:
            return .failure(PostgresError(code: .invalidUsage, message: "an operation is already running"))
        case .closed:
            return .failure(Self.closedError)
        }
    }

    /// The operation ended (returned or threw). An operation abandoned between its steps closes here.
    mutating func endOperation(_ id: UInt64) -> Actions {
        switch phase {
        case .operation(let operation) where operation.id == id:
            phase = .idle
            return .none
        case .abandoned(.betweenSteps):
            return closeNow(reclaim: true)
        default:
            return .none
        }
    }

    // MARK: Round trips

    /// The task is about to send (`PQsend…`). Refused when the operation was cancelled (a cancel request
    /// reaching an idle server is dropped, so a later step must not go ahead as if nothing happened),
    /// when the connection was abandoned or closed.
    mutating func startRoundTrip(_ waiter: Waiter) -> Start {
        switch phase {
        case .operation(var operation):
            guard case .between = operation.step else {
                return .refuse(.refused(PostgresError(code: .invalidUsage, message: "a round trip is already running")))
            }
            if operation.cancelRequested {
                return .refuse(.refused(PostgresError(code: .queryCancelled, message: "cancelled before it was sent")))
            }
            operation.step = .roundTrip(waiter, RoundTrip())
            phase = .operation(operation)
            return .send
        case .idle:
            return .refuse(.refused(PostgresError(code: .invalidUsage, message: "a round trip outside an operation")))
        case .abandoned:
            return .refuse(.refused(abandonedError))
        case .closed:
            return .refuse(.failed)
        }
    }

    /// Before sending, when the socket is not watched yet: the driver registers it, then reports.
    var needsWatch: Bool { watch == .none }

    mutating func watchAdded() { watch = .readable }

    /// libpq took the query; `complete` when it flushed it all, else the reactor finishes the send.
    mutating func sent(complete: Bool) -> Actions {
        guard !complete else { return .none }
        switch phase {
        case .operation(var operation):
            guard case .roundTrip(let waiter, var roundTrip) = operation.step else { return .none }
            roundTrip.writing = true
            operation.step = .roundTrip(waiter, roundTrip)
            phase = .operation(operation)
        case .abandoned(.roundTrip(var roundTrip)):
            roundTrip.writing = true
            phase = .abandoned(.roundTrip(roundTrip))
        default:
            return .none
        }
        watch = .readableAndWritable
        return Actions(watch: .writable(true))
    }

    /// The reactor: the socket is readable (or hung up) and/or writable.
    mutating func socketReady(readable: Bool) -> SocketAction {
        switch phase {
        case .operation(let operation):
            if case .roundTrip(_, let roundTrip) = operation.step {
                return .progress(flush: roundTrip.writing, read: readable)
            }
        case .abandoned(.roundTrip(let roundTrip)):
            return .progress(flush: roundTrip.writing, read: readable)
        case .closed:
            return .ignore
        default:
            break
        }
        guard watch != .none else { return .ignore }
        watch = .none
        return .stopWatching(Actions(watch: .remove))
    }

    /// The driver sent and read what it could: `results` are the complete results taken, `flushed` that
    /// nothing is left to send, `done` that the server's answer has ended.
    mutating func progressed(results newResults: [Result], flushed: Bool, done: Bool) -> Actions {
        var actions = Actions.none
        switch phase {
        case .operation(var operation):
            guard case .roundTrip(let waiter, var roundTrip) = operation.step else {
                actions.clear = newResults
                return actions
            }
            roundTrip.results += newResults
            if roundTrip.writing && flushed {
                roundTrip.writing = false
                watch = .readable
                actions.watch = .writable(false)
            }
            if done {
                operation.step = .between
                if operation.cancelRequested { operation.cancelAnswered = true }
                actions.resume = (waiter, .results(roundTrip.results))
            } else {
                operation.step = .roundTrip(waiter, roundTrip)
            }
            phase = .operation(operation)
        case .abandoned(.roundTrip(var roundTrip)):
            roundTrip.results += newResults
            if done {
                actions = closeNow(reclaim: true)
                actions.clear = roundTrip.results
                return actions
            }
            if roundTrip.writing && flushed {
                roundTrip.writing = false
                watch = .readable
                actions.watch = .writable(false)
            }
            phase = .abandoned(.roundTrip(roundTrip))
        default:
            actions.clear = newResults
        }
        return actions
    }

    /// Sending, reading or changing the socket's registration failed (`results`: any taken before).
    /// The waiter is told `failed`; an abandoned connection is closed.
    mutating func ioFailed(results newResults: [Result] = []) -> Actions {
        switch phase {
        case .operation(var operation):
            guard case .roundTrip(let waiter, let roundTrip) = operation.step else {
                return Actions(clear: newResults)
            }
            operation.step = .between
            phase = .operation(operation)
            var actions = Actions(clear: roundTrip.results + newResults, resume: (waiter, .failed))
            if watch != .none {
                watch = .none
                actions.watch = .remove
            }
            return actions
        case .abandoned(.roundTrip(let roundTrip)):
            var actions = closeNow(reclaim: true)
            actions.clear = roundTrip.results + newResults
            return actions
        default:
            return Actions(clear: newResults)
        }
    }

    // MARK: Blocking jobs

    /// A blocking libpq call is about to be submitted to the pool's threads. `refuseIfCancelled`: not
    /// when the operation was cancelled already (a clean-up ROLLBACK still runs, within the grace).
    mutating func startJob(_ waiter: Waiter, cancelOnServer: Bool, refuseIfCancelled: Bool) -> Start {
        switch phase {
        case .operation(var operation):
            guard case .between = operation.step else {
                return .refuse(.refused(PostgresError(code: .invalidUsage, message: "a job is already running")))
            }
            if operation.cancelRequested && refuseIfCancelled {
                return .refuse(.refused(PostgresError(code: .queryCancelled, message: "cancelled before it was sent")))
            }
            operation.step = .job(waiter, cancelOnServer: cancelOnServer)
            phase = .operation(operation)
            return .send
        case .idle:
            return .refuse(.refused(PostgresError(code: .invalidUsage, message: "a job outside an operation")))
        case .abandoned:
            return .refuse(.refused(abandonedError))
        case .closed:
            return .refuse(.refused(Self.closedError))
        }
    }

    /// The job returned on its thread: its task is resumed, or, abandoned, the connection is closed there.
    mutating func jobReturned() -> Actions {
        switch phase {
        case .operation(var operation):
            guard case .job(let waiter, _) = operation.step else { return .none }
            operation.step = .between
            if operation.cancelRequested { operation.cancelAnswered = true }
            if closeWhenJobReturns {
                phase = .operation(operation)
                var actions = closeNow(reclaim: false)
                actions.resume = (waiter, .jobReturned)
                return actions
            }
            phase = .operation(operation)
            return Actions(resume: (waiter, .jobReturned))
        case .abandoned(.job):
            return closeNow(reclaim: true)
        default:
            return .none
        }
    }

    // MARK: Cancel and abandon

    /// The task running `id` was cancelled (any thread).
    mutating func cancel(_ id: UInt64) -> Actions {
        guard case .operation(var operation) = phase, operation.id == id else { return .none }
        var actions = Actions.none
        if !operation.cancelRequested {
            operation.cancelRequested = true
            switch operation.step {
            case .roundTrip: actions.sendCancelRequest = true
            case .job(_, let cancelOnServer): actions.sendCancelRequest = cancelOnServer
            case .between: break
            }
        }
        if !operation.graceTimerStarted {
            operation.graceTimerStarted = true
            actions.startGraceTimer = id
        }
        phase = .operation(operation)
        return actions
    }

    /// The grace after cancelling `id` ran out. If the operation still waits on the server, its task is
    /// resumed now with `.queryCancelled` and the connection abandoned; one that has ended is left alone,
    /// and so is one whose round trip or job the server answered after the cancel (the task reads that
    /// answer, a 57014 being its cancel, however late it runs).
    mutating func graceExpired(_ id: UInt64) -> Actions {
        guard case .operation(let operation) = phase, operation.id == id else { return .none }
        switch operation.step {
        case .roundTrip(let waiter, let roundTrip):
            isAbandoned = true
            phase = .abandoned(.roundTrip(roundTrip))
            return Actions(resume: (waiter, .refused(abandonedError)))
        case .job(let waiter, _):
            isAbandoned = true
            phase = .abandoned(.job)
            return Actions(resume: (waiter, .refused(abandonedError)))
        case .between where operation.cancelAnswered:
            return .none
        case .between:
            isAbandoned = true
            phase = .abandoned(.betweenSteps)
            return .none
        }
    }

    /// A cancel request is about to use the `PGcancel` (on the cancel threads); false when it was freed.
    mutating func cancelRequestStarting() -> Bool {
        guard !cancelHandleFreed, !isClosed else { return false }
        cancelRequestsSending += 1
        return true
    }

    /// libpq returned from the cancel request; `sent` false condemns the connection.
    mutating func cancelRequestFinished(sent: Bool) -> Actions {
        cancelRequestsSending -= 1
        if !sent { isCondemned = true }
        guard isClosed, cancelRequestsSending == 0, !cancelHandleFreed else { return .none }
        cancelHandleFreed = true
        return Actions(freeCancelHandle: true)
    }

    // MARK: Close

    /// Closes the connection (the pool's discard, shutdown, deinit); a second close does nothing. A
    /// waiting round trip fails; a job blocked in libpq keeps the connection until it returns; an
    /// abandoned connection is closed by what still runs on it.
    mutating func close() -> Actions {
        switch phase {
        case .closed:
            return .none
        case .operation(let operation):
            switch operation.step {
            case .job:
                closeWhenJobReturns = true
                return .none
            case .roundTrip(let waiter, let roundTrip):
                var actions = closeNow(reclaim: false)
                actions.clear = roundTrip.results
                actions.resume = (waiter, .failed)
                return actions
            case .between:
                return closeNow(reclaim: false)
            }
        case .abandoned:
            // Whatever still runs on it closes it when it ends (the reactor's read, the job, the task's
            // operation) and gives its slot back then: until the server answers, the slot stays taken.
            return .none
        case .idle:
            return closeNow(reclaim: false)
        }
    }

    private mutating func closeNow(reclaim: Bool) -> Actions {
        phase = .closed
        var actions = Actions.none
        if watch != .none {
            watch = .none
            actions.watch = .remove
        }
        let freeCancelHandle = cancelRequestsSending == 0 && !cancelHandleFreed
        if freeCancelHandle { cancelHandleFreed = true }
        actions.close = Close(freeCancelHandle: freeCancelHandle, reclaim: reclaim)
        return actions
    }

    private var abandonedError: PostgresError {
        PostgresError(
            code: .queryCancelled,
            message:
                "cancelled; the database did not stop the query within \(cancelGrace), so its connection is abandoned"
        )
    }

    private static var closedError: PostgresError {
        PostgresError(code: .connectionClosed, message: "the connection is closed")
    }
}
