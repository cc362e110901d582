import Testing

@testable import Postgres

/// One connection's state machine on its own: waiters are names, results are numbers, no libpq, no
/// socket, no task, no clock. Each test feeds the events `ConnectionDriver` feeds (a send, the reactor's
/// readiness, a cancel, the grace running out, a job returning, close) and checks what it is told to do.
@Suite("ConnectionStateMachine: one connection's transitions without a server")
struct ConnectionStateMachineTests {
    typealias Machine = ConnectionStateMachine<String, Int>

    private func results(_ actions: Machine.Actions) -> [Int]? {
        guard case .results(let results) = actions.resume?.outcome else { return nil }
        return results
    }

    private func refusal(_ outcome: ConnectionOutcome<Int>?) -> PostgresError.Code? {
        guard case .refused(let error) = outcome else { return nil }
        return error.code
    }

    private func refusal(_ start: Machine.Start) -> PostgresError.Code? {
        guard case .refuse(let outcome) = start else { return nil }
        return refusal(outcome)
    }

    private func isFailed(_ actions: Machine.Actions) -> Bool {
        guard case .failed = actions.resume?.outcome else { return false }
        return true
    }

    private func isSend(_ start: Machine.Start) -> Bool {
        if case .send = start { return true }
        return false
    }

    private func operation(_ machine: inout Machine) throws -> UInt64 {
        try machine.startOperation().get()
    }

    /// An operation with a round trip sent whole, the socket watched.
    private func inFlight(_ machine: inout Machine, waiter: String = "task") throws -> UInt64 {
        let id = try operation(&machine)
        #expect(isSend(machine.startRoundTrip(waiter)))
        if machine.needsWatch { machine.watchAdded() }
        #expect(machine.sent(complete: true).watch == nil)
        return id
    }

    @Test("a round trip: sent, read in two parts, the task resumed with every result; the socket stays watched")
    func roundTrip() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        let id = try operation(&machine)
        #expect(isSend(machine.startRoundTrip("task")))
        #expect(machine.needsWatch)
        machine.watchAdded()
        #expect(machine.sent(complete: true).watch == nil)
        guard case .progress(flush: false, read: true) = machine.socketReady(readable: true) else {
            Issue.record("a readable socket with a round trip in flight is read")
            return
        }
        let partial = machine.progressed(results: [1], flushed: true, done: false)
        #expect(partial.resume == nil && partial.clear.isEmpty)
        let done = machine.progressed(results: [2], flushed: true, done: true)
        #expect(done.resume?.waiter == "task" && results(done) == [1, 2])
        #expect(!machine.isWatchedAndQuiet, "still inside the operation")
        #expect(machine.endOperation(id).close == nil)
        #expect(machine.isWatchedAndQuiet && machine.isUsable)
        // The next round trip needs no new registration.
        _ = try operation(&machine)
        #expect(isSend(machine.startRoundTrip("next")) && !machine.needsWatch)
    }

    @Test("a send libpq could not finish: the reactor watches for writable, and stops once it is flushed")
    func partialSend() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        _ = try operation(&machine)
        _ = machine.startRoundTrip("task")
        machine.watchAdded()
        #expect(machine.sent(complete: false).watch == .writable(true))
        guard case .progress(flush: true, read: false) = machine.socketReady(readable: false) else {
            Issue.record("a writable socket with bytes left to send is flushed")
            return
        }
        #expect(machine.progressed(results: [], flushed: false, done: false).watch == nil)
        let flushed = machine.progressed(results: [], flushed: true, done: false)
        #expect(flushed.watch == .writable(false) && flushed.resume == nil)
        guard case .progress(flush: false, read: true) = machine.socketReady(readable: true) else {
            Issue.record("after the flush only reads remain")
            return
        }
        #expect(results(machine.progressed(results: [7], flushed: true, done: true)) == [7])
    }

    @Test("cancel while sending: one cancel request and one grace timer; the answer still reaches the task")
    func cancelWhileSending() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        let id = try operation(&machine)
        _ = machine.startRoundTrip("task")
        machine.watchAdded()
        _ = machine.sent(complete: false)
        let cancel = machine.cancel(id)
        #expect(cancel.sendCancelRequest && cancel.startGraceTimer == id && cancel.resume == nil)
        let again = machine.cancel(id)
        #expect(!again.sendCancelRequest && again.startGraceTimer == nil, "a second cancel adds nothing")
        #expect(machine.isCancelRequested)
        _ = machine.progressed(results: [], flushed: true, done: false)
        // The server's 57014 error is a result like any other.
        #expect(results(machine.progressed(results: [57014], flushed: true, done: true)) == [57014])
        _ = machine.endOperation(id)
        #expect(!machine.isCancelRequested)
        let expired = machine.graceExpired(id)
        #expect(expired.resume == nil && expired.close == nil, "the grace of an ended operation changes nothing")
        #expect(machine.isUsable && !machine.isAbandoned)
    }

    // A clean clone's `make test` (11-29) saw ClientTests' cancelled pg_sleep fail with the server's 57014
    // as `.server`, its connection replaced: the answer had arrived, but the task, slow to run on a loaded
    // machine, read the error after the grace ran out, and the grace had abandoned the connection.
    @Test("the grace running out after the server answered the cancel: the cancel stands, the connection is kept")
    func graceAfterTheAnswer() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        let id = try inFlight(&machine)
        #expect(machine.cancel(id).startGraceTimer == id)
        #expect(results(machine.progressed(results: [57014], flushed: true, done: true)) == [57014])
        let expired = machine.graceExpired(id)
        #expect(expired.resume == nil && expired.close == nil)
        #expect(machine.isCancelRequested, "the task, reading the 57014 now, learns it was its cancel")
        #expect(!machine.isAbandoned)
        #expect(refusal(machine.startRoundTrip("next")) == .queryCancelled, "a next step is refused all the same")
        #expect(machine.endOperation(id).close == nil && machine.isUsable)
    }

    @Test("cancel before the send: no cancel request (the server has nothing), and the send is refused")
    func cancelBeforeSend() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        let id = try operation(&machine)
        let cancel = machine.cancel(id)
        #expect(!cancel.sendCancelRequest && cancel.startGraceTimer == id)
        #expect(refusal(machine.startRoundTrip("task")) == .queryCancelled)
        #expect(refusal(machine.startJob("job", cancelOnServer: true, refuseIfCancelled: true)) == .queryCancelled)
        _ = machine.endOperation(id)
        #expect(machine.isUsable)
    }

    @Test("a cancel between two steps (after PREPARE, before EXECUTE) refuses the next step")
    func cancelBetweenSteps() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        let id = try inFlight(&machine)
        _ = machine.progressed(results: [1], flushed: true, done: true)
        #expect(!machine.cancel(id).sendCancelRequest)
        #expect(refusal(machine.startRoundTrip("execute")) == .queryCancelled)
    }

    @Test("a cancel after the result (the operation ended) touches neither it nor the next operation")
    func cancelAfterResult() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        let first = try inFlight(&machine)
        _ = machine.progressed(results: [1], flushed: true, done: true)
        _ = machine.endOperation(first)
        let late = machine.cancel(first)
        #expect(!late.sendCancelRequest && late.startGraceTimer == nil)
        let second = try inFlight(&machine, waiter: "second")
        #expect(second != first)
        #expect(machine.cancel(first).startGraceTimer == nil && !machine.isCancelRequested)
        #expect(machine.graceExpired(first).resume == nil && !machine.isAbandoned)
        #expect(results(machine.progressed(results: [2], flushed: true, done: true)) == [2])
    }

    @Test("abandon in flight: the task resumed at once; the reactor reads to the end, then close and reclaim")
    func abandonInFlight() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        let id = try inFlight(&machine)
        _ = machine.progressed(results: [1], flushed: true, done: false)
        _ = machine.cancel(id)
        let expired = machine.graceExpired(id)
        #expect(expired.resume?.waiter == "task" && refusal(expired.resume?.outcome) == .queryCancelled)
        #expect(expired.close == nil, "the round trip is still being read")
        #expect(machine.isAbandoned && !machine.isUsable)
        #expect(machine.endOperation(id).close == nil, "the task unwinding does not close it")
        #expect(machine.close().close == nil, "nor does the pool dropping it: the slot stays taken")
        let refused = machine.startOperation()
        #expect(refusal(refused.asStart) == .queryCancelled)
        guard case .progress = machine.socketReady(readable: true) else {
            Issue.record("the reactor still reads an abandoned round trip")
            return
        }
        #expect(machine.progressed(results: [2], flushed: true, done: false).close == nil)
        let done = machine.progressed(results: [3], flushed: true, done: true)
        #expect(done.resume == nil && done.clear == [1, 2, 3] && done.watch == .remove)
        #expect(done.close?.reclaim == true && done.close?.freeCancelHandle == true)
        #expect(machine.isClosed && machine.isAbandoned)
        #expect(machine.close().close == nil, "closed once")
    }

    @Test("abandon in flight, then the socket fails: closed and reclaimed all the same")
    func abandonedThenSocketFails() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        let id = try inFlight(&machine)
        _ = machine.cancel(id)
        _ = machine.graceExpired(id)
        let failed = machine.ioFailed(results: [9])
        #expect(failed.resume == nil && failed.clear == [9] && failed.close?.reclaim == true)
    }

    @Test("abandon between steps: nothing to resume; the next step is refused and the task's end closes it")
    func abandonBetweenSteps() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        let id = try operation(&machine)
        _ = machine.cancel(id)
        #expect(machine.graceExpired(id).resume == nil)
        #expect(machine.isAbandoned)
        let ended = machine.endOperation(id)
        #expect(ended.close?.reclaim == true && machine.isClosed)
    }

    @Test("a job: a cancel asks the server when the job can be cancelled there; it returns within the grace")
    func jobCancelled() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        let id = try operation(&machine)
        #expect(isSend(machine.startJob("script", cancelOnServer: true, refuseIfCancelled: true)))
        let cancel = machine.cancel(id)
        #expect(cancel.sendCancelRequest && cancel.startGraceTimer == id)
        let returned = machine.jobReturned()
        guard case .jobReturned = returned.resume?.outcome else {
            Issue.record("the job's task is resumed")
            return
        }
        #expect(returned.resume?.waiter == "script")
        _ = machine.endOperation(id)
        #expect(machine.graceExpired(id).resume == nil && machine.isUsable)
    }

    @Test("a clean-up ROLLBACK of a cancelled task still runs, without a cancel request")
    func rollbackAfterCancel() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        let id = try operation(&machine)
        #expect(machine.cancel(id).startGraceTimer == id)
        #expect(isSend(machine.startJob("rollback", cancelOnServer: false, refuseIfCancelled: false)))
        #expect(!machine.cancel(id).sendCancelRequest)
    }

    @Test("abandon a blocked job: the task resumed; when the job returns, the connection is closed and reclaimed")
    func abandonJob() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        let id = try operation(&machine)
        _ = machine.startJob("connect", cancelOnServer: false, refuseIfCancelled: false)
        _ = machine.cancel(id)
        let expired = machine.graceExpired(id)
        #expect(expired.resume?.waiter == "connect" && refusal(expired.resume?.outcome) == .queryCancelled)
        #expect(machine.close().close == nil, "libpq still runs on it")
        let returned = machine.jobReturned()
        #expect(returned.resume == nil && returned.close?.reclaim == true && machine.isClosed)
    }

    @Test("close while waiting: the task told the round trip failed, the socket forgotten; a late readiness ignored")
    func closeWhileWaiting() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        _ = try inFlight(&machine)
        _ = machine.progressed(results: [4], flushed: true, done: false)
        let closed = machine.close()
        #expect(isFailed(closed) && closed.clear == [4] && closed.watch == .remove)
        #expect(closed.close?.reclaim == false && closed.close?.freeCancelHandle == true)
        guard case .ignore = machine.socketReady(readable: true) else {
            Issue.record("a closed connection reads nothing")
            return
        }
        #expect(machine.startRoundTrip("late").isRefusedAsFailed)
    }

    @Test("double close: the second does nothing (no second PQfinish, no second free)")
    func doubleClose() {
        var machine = Machine(cancelGrace: .milliseconds(250))
        let first = machine.close()
        #expect(first.close?.reclaim == false && first.close?.freeCancelHandle == true && first.watch == nil)
        let second = machine.close()
        #expect(second.close == nil && second.watch == nil)
        #expect(machine.isClosed && !machine.isUsable)
        guard case .failure(let error) = machine.startOperation() else {
            Issue.record("a closed connection starts nothing")
            return
        }
        #expect(error.code == .connectionClosed)
    }

    @Test("close while a job blocks in libpq waits for it: PQfinish only after the job returned")
    func closeWhileJob() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        _ = try operation(&machine)
        _ = machine.startJob("copy", cancelOnServer: true, refuseIfCancelled: true)
        #expect(machine.close().close == nil)
        let returned = machine.jobReturned()
        #expect(returned.resume?.waiter == "copy" && returned.close?.reclaim == false && machine.isClosed)
    }

    @Test("a cancel request in flight keeps the PGcancel: close leaves it, the request's end frees it")
    func cancelHandleOutlivesClose() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        let id = try inFlight(&machine)
        #expect(machine.cancel(id).sendCancelRequest)
        let started = machine.cancelRequestStarting()
        #expect(started)
        _ = machine.progressed(results: [1], flushed: true, done: true)
        _ = machine.endOperation(id)
        let closed = machine.close()
        #expect(closed.close?.freeCancelHandle == false)
        let startedAfterClose = machine.cancelRequestStarting()
        #expect(!startedAfterClose, "no new request on a closed connection")
        #expect(machine.cancelRequestFinished(sent: true).freeCancelHandle)
    }

    @Test("a cancel request libpq could not send condemns the connection: the pool will not lease it again")
    func failedCancelCondemns() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        let id = try inFlight(&machine)
        _ = machine.cancel(id)
        let started = machine.cancelRequestStarting()
        #expect(started)
        #expect(!machine.cancelRequestFinished(sent: false).freeCancelHandle)
        #expect(machine.isCondemned && !machine.isUsable)
        _ = machine.progressed(results: [1], flushed: true, done: true)
        _ = machine.endOperation(id)
        guard case .failure = machine.startOperation() else {
            Issue.record("a condemned connection starts nothing")
            return
        }
    }

    @Test("the server speaks to an idle connection: the reactor stops watching it, and it is no longer 'quiet'")
    func idleSocketSpeaks() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        let id = try inFlight(&machine)
        _ = machine.progressed(results: [1], flushed: true, done: true)
        _ = machine.endOperation(id)
        #expect(machine.isWatchedAndQuiet)
        guard case .stopWatching(let actions) = machine.socketReady(readable: true) else {
            Issue.record("nobody waits: stop watching")
            return
        }
        #expect(actions.watch == .remove && !machine.isWatchedAndQuiet && machine.needsWatch)
        guard case .ignore = machine.socketReady(readable: true) else {
            Issue.record("an unwatched socket's stale event is ignored")
            return
        }
    }

    @Test("a send or read that fails resumes the task with 'failed' and forgets the socket")
    func ioFailure() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        let id = try inFlight(&machine)
        _ = machine.progressed(results: [1], flushed: true, done: false)
        let failed = machine.ioFailed(results: [2])
        #expect(isFailed(failed) && failed.clear == [1, 2] && failed.watch == .remove)
        #expect(machine.endOperation(id).close == nil && machine.needsWatch)
    }

    @Test("two operations at once on one connection are refused (a lease is one task's)")
    func oneOperationAtATime() throws {
        var machine = Machine(cancelGrace: .milliseconds(250))
        _ = try operation(&machine)
        guard case .failure(let error) = machine.startOperation() else {
            Issue.record("a second operation must wait for the first")
            return
        }
        #expect(error.code == .invalidUsage)
        #expect(refusal(machine.startRoundTrip("a")) == nil)
        #expect(refusal(machine.startRoundTrip("b")) == .invalidUsage)
    }
}

extension Result where Success == UInt64, Failure == PostgresError {
    /// A refused start, as a round trip's refusal, to compare codes.
    fileprivate var asStart: ConnectionStateMachine<String, Int>.Start {
        switch self {
        case .success: .send
        case .failure(let error): .refuse(.refused(error))
        }
    }
}

extension ConnectionStateMachine.Start {
    fileprivate var isRefusedAsFailed: Bool {
        if case .refuse(.failed) = self { return true }
        return false
    }
}
