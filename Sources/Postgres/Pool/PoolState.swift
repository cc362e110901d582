/// The pool's bookkeeping, mutated only under `PostgresClient.state`'s lock. Every method is
/// synchronous and returns what the caller must do outside the lock (resume a waiter, connect).
struct PoolState {
    enum Grant: Sendable {
        case connection(PGConnection)
        /// A slot reserved for a new connection, which the grantee opens.
        case open(id: Int)
    }

    enum LeaseDecision {
        case grant(Grant)
        case wait
        case fail
    }

    enum ReleaseDecision {
        case handedOver(CheckedContinuation<Grant, any Error>)
        case idled
        case close
    }

    struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Grant, any Error>
    }

    /// Connections open or being opened.
    var opened = 0
    /// Connections (or reserved slots) held by tasks.
    var leased = 0
    var idle: [PGConnection] = []
    var waiters: [Waiter] = []
    /// Waiters cancelled before they enqueued (the cancellation handler ran first).
    var cancelledWaiters: Set<UInt64> = []
    var isShutdown = false
    var nextConnectionID = 1

    mutating func tryLease(max: Int) -> LeaseDecision {
        if isShutdown { return .fail }
        if let connection = idle.popLast() {
            leased += 1
            return .grant(.connection(connection))
        }
        if opened < max {
            opened += 1
            leased += 1
            return .grant(.open(id: takeConnectionID()))
        }
        return .wait
    }

    /// Reserves a slot for an idle connection opened by the pool itself (minimum connections).
    mutating func reserveSlot(max: Int) -> Int? {
        guard !isShutdown, opened < max else { return nil }
        opened += 1
        return takeConnectionID()
    }

    mutating func slotFailed() { opened -= 1 }

    mutating func enqueue(id: UInt64, continuation: CheckedContinuation<Grant, any Error>) {
        if cancelledWaiters.remove(id) != nil {
            continuation.resume(throwing: CancellationError())
        } else if isShutdown {
            continuation.resume(throwing: PostgresError(code: .poolClosed, message: "the database client has shut down"))
        } else {
            waiters.append(Waiter(id: id, continuation: continuation))
        }
    }

    mutating func removeWaiter(_ id: UInt64) -> CheckedContinuation<Grant, any Error>? {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
        return waiters.remove(at: index).continuation
    }

    mutating func cancelWaiter(_ id: UInt64) -> CheckedContinuation<Grant, any Error>? {
        if let continuation = removeWaiter(id) { return continuation }
        cancelledWaiters.insert(id)
        return nil
    }

    mutating func release(_ connection: PGConnection) -> ReleaseDecision {
        if isShutdown { return .close }
        if !waiters.isEmpty { return .handedOver(waiters.removeFirst().continuation) }
        leased -= 1
        idle.append(connection)
        return .idled
    }

    /// A leased connection was closed. Returns a waiter that now gets the freed slot.
    mutating func closed(max: Int) -> (continuation: CheckedContinuation<Grant, any Error>, slot: Int)? {
        opened -= 1
        leased -= 1
        guard !isShutdown, !waiters.isEmpty, opened < max else { return nil }
        opened += 1
        leased += 1
        return (waiters.removeFirst().continuation, takeConnectionID())
    }

    /// Opening a reserved slot failed. The slot passes to the next waiter, who tries in turn.
    mutating func connectFailed() -> CheckedContinuation<Grant, any Error>? {
        if !isShutdown, !waiters.isEmpty { return waiters.removeFirst().continuation }
        opened -= 1
        leased -= 1
        return nil
    }

    private mutating func takeConnectionID() -> Int {
        defer { nextConnectionID += 1 }
        return nextConnectionID
    }
}
