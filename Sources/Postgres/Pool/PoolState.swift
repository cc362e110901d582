/// The pool's bookkeeping as a state machine, generic over what it pools (`Connection`) and over who
/// waits for a lease (`Waiter`), as postgres-nio's pool state machine is, so that its transitions can
/// be tested without a database or a task (`PoolStateTests`).
///
/// `PostgresClient` keeps it behind a lock. Every method is synchronous, never calls out and never
/// resumes anything: it returns what the caller must do once the lock is released (hand a connection
/// or a slot to a waiter, fail a waiter, open or close a connection).
struct PoolState<Connection, Waiter> {
    typealias Grant = PoolGrant<Connection>

    enum LeaseDecision {
        case grant(Grant)
        case wait
        case fail
    }

    /// Why a waiter is turned away when it enqueues.
    enum Refusal: Equatable {
        /// Its task was cancelled before it enqueued (the cancellation handler ran first).
        case cancelled
        case shutDown
    }

    enum ReleaseDecision {
        /// The connection goes to this waiter, which was removed from the queue.
        case handOver(Waiter, Grant)
        case idled
        /// The pool is shut down: close the connection, then report it `closed`.
        case close
    }

    /// What shutting down leaves the caller to do.
    struct ShutdownActions {
        var waitersToFail: [Waiter]
        var connectionsToClose: [Connection]
        var wasAlreadyShutDown: Bool
    }

    private struct QueuedWaiter {
        let id: UInt64
        let waiter: Waiter
    }

    /// Connections open or being opened.
    private(set) var opened = 0
    /// Connections (or reserved slots) held by tasks.
    private(set) var leased = 0
    /// Connections whose task stopped waiting for a job still blocked on the server: no longer
    /// leased, still open (their slot stays taken, so blocked threads never outnumber the slots).
    private(set) var abandoned = 0
    private(set) var idle: [Connection] = []
    private var waiters: [QueuedWaiter] = []
    /// Waiters cancelled before they enqueued (the cancellation handler ran first).
    private var cancelledWaiters: Set<UInt64> = []
    private(set) var isShutdown = false
    private var nextConnectionID = 1

    var waiting: Int { waiters.count }

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

    /// Opening a slot reserved with `reserveSlot` failed.
    mutating func slotFailed() { opened -= 1 }

    /// A connection opened in a slot from `reserveSlot` is about to be released like a leased one.
    mutating func slotOpened() { leased += 1 }

    /// Queues `waiter`, or refuses it (the caller then fails it, outside the lock).
    mutating func enqueue(id: UInt64, waiter: Waiter) -> Refusal? {
        if cancelledWaiters.remove(id) != nil { return .cancelled }
        if isShutdown { return .shutDown }
        waiters.append(QueuedWaiter(id: id, waiter: waiter))
        return nil
    }

    /// Takes a waiter out of the queue (its lease timed out); nil when it was served meanwhile.
    mutating func removeWaiter(_ id: UInt64) -> Waiter? {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
        return waiters.remove(at: index).waiter
    }

    /// A waiter's task was cancelled: takes it out of the queue, or remembers the cancellation when it
    /// has not enqueued yet.
    mutating func cancelWaiter(_ id: UInt64) -> Waiter? {
        if let waiter = removeWaiter(id) { return waiter }
        cancelledWaiters.insert(id)
        return nil
    }

    mutating func release(_ connection: Connection) -> ReleaseDecision {
        if isShutdown { return .close }
        if !waiters.isEmpty { return .handOver(waiters.removeFirst().waiter, .connection(connection)) }
        leased -= 1
        idle.append(connection)
        return .idled
    }

    /// A leased connection was closed. Returns a waiter that now gets the freed slot.
    mutating func closed(max: Int) -> (waiter: Waiter, slot: Int)? {
        opened -= 1
        leased -= 1
        guard !isShutdown, !waiters.isEmpty, opened < max else { return nil }
        opened += 1
        leased += 1
        return (waiters.removeFirst().waiter, takeConnectionID())
    }

    /// The holder of a lease stopped waiting for a job on its connection (or connect) that the
    /// server does not answer; the slot stays taken until `abandonedClosed`.
    mutating func abandonLease() {
        leased -= 1
        abandoned += 1
    }

    /// The job an abandoned connection was left to has returned and the connection is closed (or
    /// the abandoned connect ended). Returns a waiter that now gets the freed slot.
    mutating func abandonedClosed(max: Int) -> (waiter: Waiter, slot: Int)? {
        opened -= 1
        abandoned -= 1
        guard !isShutdown, !waiters.isEmpty, opened < max else { return nil }
        opened += 1
        leased += 1
        return (waiters.removeFirst().waiter, takeConnectionID())
    }

    /// Opening a reserved slot failed. The slot passes to the next waiter, who tries in turn.
    mutating func connectFailed() -> Waiter? {
        if !isShutdown, !waiters.isEmpty { return waiters.removeFirst().waiter }
        opened -= 1
        leased -= 1
        return nil
    }

    /// Refuses new leases from now on; hands back the waiters to fail and the idle connections to close.
    mutating func shutDown() -> ShutdownActions {
        let actions = ShutdownActions(
            waitersToFail: waiters.map(\.waiter), connectionsToClose: idle, wasAlreadyShutDown: isShutdown)
        isShutdown = true
        opened -= idle.count
        idle = []
        waiters = []
        return actions
    }

    private mutating func takeConnectionID() -> Int {
        defer { nextConnectionID += 1 }
        return nextConnectionID
    }
}

/// What a lease gets: a pooled connection, or a slot to open one in. Outside `PoolState` so that a
/// waiter's type (a continuation resumed with a grant) need not name the state machine it waits in.
enum PoolGrant<Connection> {
    case connection(Connection)
    /// A slot reserved for a new connection, which the grantee opens.
    case open(id: Int)
}

extension PoolGrant: Sendable where Connection: Sendable {}
