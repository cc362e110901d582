/// Limits how many tests hold a database at once. TestSupport creates each test's database through a
/// 2-connection admin pool whose leases time out after 10 s; with ~40 tests starting at once on 2
/// cores, and the randomized tests loading both, CREATE DATABASE took 0.5–2 s each and the last
/// leases timed out. Queueing here (no timeout) keeps that pool's queue short.
public actor TestGate {
    /// The ledger suites' gate.
    public static let ledger = TestGate(permits: 3)
    /// The report suites' gate (their tests load more rows each).
    public static let reports = TestGate(permits: 2)

    private var available: Int
    private var waiters: [CheckedContinuation<Void, Never>] = []

    public init(permits: Int) { available = permits }

    public nonisolated func run<R: Sendable>(_ body: () async throws -> R) async throws -> R {
        await acquire()
        do {
            let result = try await body()
            await release()
            return result
        } catch {
            await release()
            throw error
        }
    }

    private func acquire() async {
        if available > 0 {
            available -= 1
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    private func release() {
        if waiters.isEmpty { available += 1 } else { waiters.removeFirst().resume() }
    }
}
