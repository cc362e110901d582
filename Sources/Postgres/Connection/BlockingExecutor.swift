import Dispatch
import NIOPosix
import Synchronization

/// The dedicated threads on which every blocking libpq call runs, so that none of them ever
/// parks one of Swift's cooperative threads (two on this machine: two slow queries would stall
/// the whole server). Sized to the pool's maximum connections plus a spare; cancel requests have
/// threads of their own (`cancelThreads`), so that a cancel stuck on a hung server never delays a
/// query, a connect or another cancel's bound.
final class BlockingExecutor: Sendable {
    private let threads: NIOThreadPool
    private let cancelThreads: NIOThreadPool

    init(numberOfThreads: Int, numberOfCancelThreads: Int = 2) {
        threads = NIOThreadPool(numberOfThreads: numberOfThreads)
        threads.start()
        cancelThreads = NIOThreadPool(numberOfThreads: max(1, numberOfCancelThreads))
        cancelThreads.start()
    }

    /// Runs `body` on a pool thread and resumes the caller with its result. Unlike
    /// `NIOThreadPool.runIfActive`, a cancelled task still runs the job: cleanup such as ROLLBACK
    /// must happen even then. Use only for calls that cannot hang on the server (closing a
    /// connection, work outside any request); everything else goes through `run(abandoningAfter:)`.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withUnsafeThrowingContinuation { continuation in
            threads.submit { state in
                switch state {
                case .active: continuation.resume(with: Result(catching: body))
                case .cancelled: continuation.resume(throwing: Self.shutDownError)
                }
            }
        }
    }

    /// Runs `body` on a pool thread, but never holds a cancelled caller longer than `grace`.
    ///
    /// When the awaiting task is cancelled, `onCancel` runs at once (it asks the server to stop the
    /// query) and the caller waits at most `grace` more for the job. If the job has not returned by
    /// then (the server does not answer: stopped, partitioned), the caller is resumed with
    /// `abandonedError` and the job is left to finish on its own thread whenever libpq returns;
    /// `whenAbandoned` then gets its result there (the pool closes the connection and frees its slot).
    func run<T: Sendable>(
        abandoningAfter grace: Duration,
        abandonedError: @escaping @Sendable () -> any Error,
        onCancel: @escaping @Sendable () -> Void = {},
        whenAbandoned: @escaping @Sendable (Result<T, any Error>) -> Void,
        _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        let job = AbandonableJob<T>()
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                if job.install(continuation) { job.abandon(after: grace, with: abandonedError) }
                threads.submit { state in
                    let result: Result<T, any Error>
                    switch state {
                    case .active: result = Result(catching: body)
                    case .cancelled: result = .failure(Self.shutDownError)
                    }
                    if let continuation = job.finish() {
                        continuation.resume(with: result)
                    } else {
                        whenAbandoned(result)
                    }
                }
            }
        } onCancel: {
            onCancel()
            if job.cancel() { job.abandon(after: grace, with: abandonedError) }
        }
    }

    /// Sends a cancel request on the cancel threads; `done` gets whether libpq reported it sent.
    func submitCancel(_ body: @escaping @Sendable () -> Bool, done: @escaping @Sendable (Bool) -> Void) {
        cancelThreads.submit { state in
            if case .active = state { done(body()) } else { done(false) }
        }
    }

    /// Fire-and-forget work that cannot hang (closing a connection).
    func submit(_ body: @escaping @Sendable () -> Void) {
        threads.submit { state in
            if case .active = state { body() }
        }
    }

    /// Stops the threads. Jobs still blocked in libpq (a hung server) are not waited for unless
    /// `waitForRunningJobs`: the process may be on its way out, and they would hold it forever.
    func shutdown(waitForRunningJobs: Bool = true) async {
        if waitForRunningJobs {
            try? await threads.shutdownGracefully()
            try? await cancelThreads.shutdownGracefully()
        } else {
            threads.shutdownGracefully { _ in }
            cancelThreads.shutdownGracefully { _ in }
        }
    }

    private static var shutDownError: PostgresError {
        PostgresError(code: .poolClosed, message: "the database client has shut down")
    }
}

/// The hand-over between one job on a pool thread and the task awaiting it, when the task may stop
/// waiting first: whichever of "job finished" and "gave up waiting" comes first decides, under a lock.
private final class AbandonableJob<T: Sendable>: Sendable {
    private enum State {
        /// Before the continuation is installed; `cancelled` when the task was cancelled already.
        case starting(cancelled: Bool)
        case awaited(UnsafeContinuation<T, any Error>, cancelled: Bool)
        case finished
        case abandoned
    }

    private let state = Mutex(State.starting(cancelled: false))

    /// Returns true when the task was already cancelled (the caller starts the grace timer).
    func install(_ continuation: UnsafeContinuation<T, any Error>) -> Bool {
        state.withLock { state in
            guard case .starting(let cancelled) = state else { return false }
            state = .awaited(continuation, cancelled: cancelled)
            return cancelled
        }
    }

    /// Returns true when the grace timer should start now.
    func cancel() -> Bool {
        state.withLock { state in
            switch state {
            case .starting:
                state = .starting(cancelled: true)
                return false
            case .awaited(let continuation, cancelled: false):
                state = .awaited(continuation, cancelled: true)
                return true
            default:
                return false
            }
        }
    }

    /// The job returned: the continuation to resume, or nil when the caller has stopped waiting.
    func finish() -> UnsafeContinuation<T, any Error>? {
        state.withLock { state in
            guard case .awaited(let continuation, _) = state else { return nil }
            state = .finished
            return continuation
        }
    }

    func abandon(after grace: Duration, with error: @escaping @Sendable () -> any Error) {
        DispatchQueue.global().asyncAfter(deadline: .after(grace)) {
            // The error is made under the lock: whatever it records (the connection abandoned) is
            // visible before the job, finding the caller gone, hands its result to `whenAbandoned`.
            let abandoned = self.state.withLock { state -> (UnsafeContinuation<T, any Error>, any Error)? in
                guard case .awaited(let continuation, _) = state else { return nil }
                state = .abandoned
                return (continuation, error())
            }
            if let (continuation, error) = abandoned { continuation.resume(throwing: error) }
        }
    }
}

extension DispatchTime {
    /// Now plus `duration` (a negative one is now).
    static func after(_ duration: Duration) -> DispatchTime {
        let (seconds, attoseconds) = duration.components
        return .now() + .nanoseconds(max(0, Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)))
    }
}
