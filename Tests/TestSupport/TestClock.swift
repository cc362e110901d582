import Foundation
import Synchronization

/// A `Clock` that moves only when the test says so: what sleeps on it wakes when ``advance(by:)`` passes
/// its deadline, never on the wall clock. A test that asserts a timer (a refresh interval, a retry's
/// pause) drives the code under test with it: ``waitForSleepers(_:within:)`` until the code is parked,
/// then ``advance(by:)``, then look.
public final class TestClock: Clock, Sendable {
    /// The monotonic clock's instants, so that a test clock's reading can stand where code compares
    /// with a deadline (`ContinuousClock.Instant`); it starts at the real clock's now and moves only on
    /// ``advance(by:)``.
    public typealias Instant = ContinuousClock.Instant

    private struct Sleeper {
        let id: UInt64
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Instant
        var nextId: UInt64 = 0
        var sleepers: [Sleeper] = []
    }

    private let state: Mutex<State>
    private let start: Instant
    private let startDate: Date

    public init() {
        let now = ContinuousClock.now
        state = Mutex(State(now: now))
        start = now
        startDate = Date()
    }

    public var now: Instant { state.withLock { $0.now } }
    /// The wall clock as this clock tells it: the real date when it was made, moved only by ``advance(by:)``
    /// (for code that compares a wall-clock date, such as a `Retry-After`, beside its waits).
    public var date: Date {
        let moved = (now - start).components
        return startDate.addingTimeInterval(Double(moved.seconds) + Double(moved.attoseconds) / 1e18)
    }
    /// When each sleeper wakes, soonest first.
    public var wakeTimes: [Instant] { state.withLock { $0.sleepers.map(\.deadline).sorted() } }
    public var minimumResolution: Duration { .zero }
    /// How many sleep on this clock now.
    public var sleepers: Int { state.withLock { $0.sleepers.count } }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextId += 1
            return state.nextId
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLock { state -> Bool in
                    if deadline <= state.now || Task.isCancelled { return true }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }

    /// Moves the clock on by `duration` and wakes every sleeper whose deadline it passed.
    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Moves the clock on to `instant` (not back) and wakes every sleeper whose deadline it passed.
    public func advance(to instant: Instant) {
        advance(by: max(.zero, instant - now))
    }

    /// Waits (on the wall clock, at most `within`: a bound for a broken test) until one sleeps until
    /// `deadline`, give or take `tolerance` (a wait computed from dates in seconds, a `Double`, is exact to
    /// a microsecond or so). Returns the sleeper's deadline, or nil when none came.
    public func waitForSleeper(
        wakingAt deadline: Instant, tolerance: Duration = .milliseconds(1), within: Duration = .seconds(30)
    ) async -> Instant? {
        let end = ContinuousClock.now + within
        while true {
            if let found = wakeTimes.first(where: { max($0 - deadline, deadline - $0) <= tolerance }) { return found }
            guard ContinuousClock.now < end else { return nil }
            await Task.yield()
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Waits (on the wall clock, at most `within`: a bound for a broken test, not a time it measures) until
    /// at least `count` sleep on this clock. Returns false when they did not.
    public func waitForSleepers(_ count: Int = 1, within: Duration = .seconds(30)) async -> Bool {
        let deadline = ContinuousClock.now + within
        while sleepers < count {
            guard ContinuousClock.now < deadline else { return false }
            await Task.yield()
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }
}

extension Task where Failure == any Error {
    /// The task's value; cancelling the caller cancels the task too (an unstructured task's `value` does
    /// not), so a test its time limit ends also ends what it started and left asleep on a ``TestClock``.
    public var cancellableValue: Success {
        get async throws {
            try await withTaskCancellationHandler {
                try await value
            } onCancel: {
                cancel()
            }
        }
    }
}
