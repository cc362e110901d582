import Testing

@testable import Postgres

/// The pool's state machine on its own: connections are strings, waiters are names, no database, no
/// task; each test drives the transitions `PostgresClient` makes and checks what it is told to do.
@Suite("PoolState: the pool's transitions without a database")
struct PoolStateTests {
    typealias State = PoolState<String, String>

    private func openedSlot(_ decision: State.LeaseDecision) -> Int? {
        if case .grant(.open(let id)) = decision { return id }
        return nil
    }

    private func pooledConnection(_ decision: State.LeaseDecision) -> String? {
        if case .grant(.connection(let connection)) = decision { return connection }
        return nil
    }

    @Test("leases open new slots up to the maximum, then wait; ids are never reused")
    func leasesUpToMaximum() {
        var state = State()
        #expect(openedSlot(state.tryLease(max: 2)) == 1)
        #expect(openedSlot(state.tryLease(max: 2)) == 2)
        guard case .wait = state.tryLease(max: 2) else {
            Issue.record("a third lease of two slots must wait")
            return
        }
        #expect(state.opened == 2 && state.leased == 2)
    }

    @Test("a released connection goes idle, and the next lease takes it instead of opening one")
    func releaseThenReuse() {
        var state = State()
        _ = state.tryLease(max: 1)
        guard case .idled = state.release("c1") else {
            Issue.record("with nobody waiting the connection idles")
            return
        }
        #expect(state.idle == ["c1"] && state.leased == 0 && state.opened == 1)
        #expect(pooledConnection(state.tryLease(max: 1)) == "c1")
        #expect(state.idle.isEmpty && state.leased == 1)
    }

    @Test("a released connection is handed to the first waiter, in order, without idling")
    func releaseHandsOverInOrder() {
        var state = State()
        _ = state.tryLease(max: 1)
        #expect(state.enqueue(id: 1, waiter: "first") == nil)
        #expect(state.enqueue(id: 2, waiter: "second") == nil)
        guard case .handOver(let waiter, .connection(let connection)) = state.release("c1") else {
            Issue.record("a waiter gets the released connection")
            return
        }
        #expect(waiter == "first" && connection == "c1")
        #expect(state.waiting == 1 && state.idle.isEmpty && state.leased == 1)
    }

    @Test("a waiter cancelled before it enqueued is refused when it does; a queued one is taken out")
    func cancelledWaiters() {
        var state = State()
        _ = state.tryLease(max: 1)
        #expect(state.cancelWaiter(7) == nil, "not queued yet: remembered")
        #expect(state.enqueue(id: 7, waiter: "late") == .cancelled)
        #expect(state.waiting == 0)
        #expect(state.enqueue(id: 8, waiter: "queued") == nil)
        #expect(state.cancelWaiter(8) == "queued")
        #expect(state.waiting == 0)
        #expect(state.removeWaiter(8) == nil, "a waiter is taken out once")
    }

    @Test("closing a leased connection frees its slot, or passes it to a waiter as a slot to open")
    func closedPassesSlot() {
        var state = State()
        _ = state.tryLease(max: 1)
        #expect(state.closed(max: 1) == nil)
        #expect(state.opened == 0 && state.leased == 0)
        _ = state.tryLease(max: 1)
        #expect(state.enqueue(id: 1, waiter: "w") == nil)
        let passed = state.closed(max: 1)
        #expect(passed?.waiter == "w" && passed?.slot == 3)
        #expect(state.opened == 1 && state.leased == 1 && state.waiting == 0)
    }

    @Test("a failed connect passes the slot on to the next waiter, or gives it up")
    func connectFailed() {
        var state = State()
        _ = state.tryLease(max: 1)
        #expect(state.enqueue(id: 1, waiter: "w") == nil)
        #expect(state.connectFailed() == "w")
        #expect(state.opened == 1 && state.leased == 1, "the slot stays reserved for the waiter")
        #expect(state.connectFailed() == nil)
        #expect(state.opened == 0 && state.leased == 0)
    }

    @Test("shutting down fails every waiter, closes the idle connections, refuses leases, and happens once")
    func shutdown() {
        var state = State()
        _ = state.tryLease(max: 2)
        _ = state.tryLease(max: 2)
        _ = state.release("idle-one")
        #expect(state.enqueue(id: 1, waiter: "w") == nil)
        let actions = state.shutDown()
        #expect(!actions.wasAlreadyShutDown)
        #expect(actions.waitersToFail == ["w"])
        #expect(actions.connectionsToClose == ["idle-one"])
        #expect(state.opened == 1, "the leased one is still open until its holder returns it")
        guard case .fail = state.tryLease(max: 2) else {
            Issue.record("no lease after shutdown")
            return
        }
        #expect(state.enqueue(id: 2, waiter: "after") == .shutDown)
        guard case .close = state.release("leased-one") else {
            Issue.record("a connection returned after shutdown is closed")
            return
        }
        #expect(state.closed(max: 2) == nil)
        #expect(state.opened == 0)
        #expect(state.shutDown().wasAlreadyShutDown)
    }

    @Test("an abandoned connection keeps its slot until its blocked job returns, then the slot goes to a waiter")
    func abandonedKeepsSlot() {
        var state = State()
        _ = state.tryLease(max: 1)
        state.abandonLease()
        #expect(state.leased == 0 && state.abandoned == 1 && state.opened == 1)
        guard case .wait = state.tryLease(max: 1) else {
            Issue.record("the abandoned connection's slot is still taken")
            return
        }
        #expect(state.enqueue(id: 1, waiter: "w") == nil)
        let passed = state.abandonedClosed(max: 1)
        #expect(passed?.waiter == "w")
        #expect(state.abandoned == 0 && state.opened == 1 && state.leased == 1)
    }

    @Test("the minimum connections reserve slots without leasing them")
    func reservedSlots() {
        var state = State()
        #expect(state.reserveSlot(max: 2) == 1)
        #expect(state.reserveSlot(max: 2) == 2)
        #expect(state.reserveSlot(max: 2) == nil)
        state.slotFailed()
        #expect(state.opened == 1 && state.leased == 0)
        state.slotOpened()
        _ = state.release("c")
        #expect(state.idle == ["c"] && state.leased == 0)
    }
}
