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

    public init() {
        state = Mutex(State(now: .now))
    }

    public var now: Instant { state.withLock { $0.now } }
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
