import NIOPosix

/// The dedicated threads on which the blocking libpq calls run, so that none of them ever parks one of
/// Swift's cooperative threads (two on this machine) or the reactor's thread. Queries block no thread
/// (the reactor reads their answers); what still blocks is connecting, scripts, COPY, a clean-up
/// ROLLBACK and closing. Each of those but closing holds a pool slot while it runs (an abandoned one
/// keeps it until libpq returns), so the pool sizes this to its maximum connections: a hung server
/// never blocks more threads than there are slots, and a close always finds a thread (the connection it
/// closes held no job). Cancel requests have threads of their own (`cancelThreads`), so that a cancel
/// stuck on a hung server never delays a query, a connect or another cancel's bound.
final class BlockingExecutor: Sendable {
    private let threads: NIOThreadPool
    private let cancelThreads: NIOThreadPool

    init(numberOfThreads: Int, numberOfCancelThreads: Int = 2) {
        threads = NIOThreadPool(numberOfThreads: max(1, numberOfThreads))
        threads.start()
        cancelThreads = NIOThreadPool(numberOfThreads: max(1, numberOfCancelThreads))
        cancelThreads.start()
    }

    /// Runs `body` on a pool thread and resumes the caller with its result. Unlike
    /// `NIOThreadPool.runIfActive`, a cancelled task still runs the job: cleanup such as ROLLBACK
    /// must happen even then. Use only for calls that cannot hang on the server (closing a
    /// connection, work outside any request); a job that can goes through `ConnectionDriver.job`.
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

    /// Runs `body` on a pool thread; `body` gets false, and must not call libpq, when the pool has shut down.
    func submitJob(_ body: @escaping @Sendable (_ active: Bool) -> Void) {
        threads.submit { state in
            switch state {
            case .active: body(true)
            case .cancelled: body(false)
            }
        }
    }

    /// Sends a cancel request on the cancel threads.
    func submitCancel(_ body: @escaping @Sendable () -> Void) {
        cancelThreads.submit { state in
            if case .active = state { body() }
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

    static var shutDownError: PostgresError {
        PostgresError(code: .poolClosed, message: "the database client has shut down")
    }
}
