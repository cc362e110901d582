/// Runs `work` in a child task and cancels it when `timeout` passes first, failing with
/// ``DeadlineExceeded``. It returns as soon as the cancelled work does: the database client gives up
/// on a hung server within its cancel grace, so this is bounded by `timeout` plus that grace.
func withDeadline<T: Sendable>(_ timeout: Duration, _ work: @escaping @Sendable () async throws -> T) async throws -> T
{
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await work() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else { throw DeadlineExceeded(timeout: timeout) }
        return value
    }
}

/// `withDeadline`'s work did not finish in time.
struct DeadlineExceeded: Error, CustomStringConvertible {
    let timeout: Duration
    var description: String { "did not finish within \(timeout)" }
}
