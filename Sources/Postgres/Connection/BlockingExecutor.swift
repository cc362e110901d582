import NIOPosix

/// The dedicated threads on which every blocking libpq call runs, so that none of them ever
/// parks one of Swift's cooperative threads (two on this machine: two slow queries would stall
/// the whole server). Sized to the pool's maximum connections plus a spare for cancel requests.
final class BlockingExecutor: Sendable {
    private let threads: NIOThreadPool

    init(numberOfThreads: Int) {
        threads = NIOThreadPool(numberOfThreads: numberOfThreads)
        threads.start()
    }

    /// Runs `body` on a pool thread and resumes the caller with its result. Unlike
    /// `NIOThreadPool.runIfActive`, a cancelled task still runs the job: cleanup such as ROLLBACK
    /// must happen even then; cancellation of the query itself is handled by `PostgresConnection`.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withUnsafeThrowingContinuation { continuation in
            threads.submit { state in
                switch state {
                case .active: continuation.resume(with: Result(catching: body))
                case .cancelled: continuation.resume(throwing: PostgresError(code: .poolClosed, message: "the database client has shut down"))
                }
            }
        }
    }

    /// Fire-and-forget work (sending a cancel request from a cancellation handler).
    func submit(_ body: @escaping @Sendable () -> Void) {
        threads.submit { state in
            if case .active = state { body() }
        }
    }

    func shutdown() async {
        try? await threads.shutdownGracefully()
    }
}
