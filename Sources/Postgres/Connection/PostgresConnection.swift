import Dispatch
import Synchronization

/// A connection leased from a `PostgresClient` for the duration of one `withConnection` or
/// `withTransaction` body. Use it only inside that body.
///
/// Cancelling the awaiting task while a query runs sends a cancel request to the server; the
/// query fails with `.queryCancelled` and the connection stays usable. If the server does not
/// answer within the pool's `cancelGrace` (it is hung, or the cancel request could not be sent),
/// the task stops waiting all the same: the call fails with `.queryCancelled`, the connection is
/// abandoned and is closed, never reused, when the server answers or the socket fails (the reactor
/// still reads it; for a blocking step, when libpq returns on its thread).
public struct PostgresConnection: Sendable {
    let connection: PGConnection
    let executor: BlockingExecutor
    private let operations: OperationCounter
    private let cancelGrace: Duration
    /// Called on the libpq thread when a job this connection's task stopped waiting for returns.
    private let reclaim: @Sendable (PGConnection) -> Void

    init(
        connection: PGConnection, executor: BlockingExecutor, operations: OperationCounter, cancelGrace: Duration,
        reclaim: @escaping @Sendable (PGConnection) -> Void
    ) {
        self.connection = connection
        self.executor = executor
        self.operations = operations
        self.cancelGrace = cancelGrace
        self.reclaim = reclaim
    }

    /// Runs one statement and returns all of its rows. It is sent from this task and answered
    /// through the reactor (`SocketReactor`): no thread waits for the server.
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresRows {
        let connection = self.connection
        try connection.checkNotAbandoned()
        let operation = operations.next()
        connection.prepare(operation: operation)
        // Abandoned between round trips: closing (PQfinish writes to the socket) goes to the pool's threads.
        defer { if connection.roundTrips.takeReclaimDuty() { executor.submit { [reclaim] in reclaim(connection) } } }
        return try await withTaskCancellationHandler {
            try await connection.execute(query, operation: operation, executor: executor)
        } onCancel: { [executor, cancelGrace, reclaim] in
            if connection.requestCancel(operation: operation) {
                executor.submitCancel({ connection.sendCancel() }, done: { _ in })
            }
            DispatchQueue.global().asyncAfter(deadline: .after(cancelGrace)) {
                connection.abandon(
                    operation: operation, with: Self.abandonedError(grace: cancelGrace),
                    reclaim: { reclaim(connection) })
            }
        }
    }

    /// Runs one statement and returns the number of rows it affected (0 when it reports none).
    @discardableResult
    public func execute(_ query: PostgresQuery) async throws -> Int {
        try await self.query(query).affectedRows ?? 0
    }

    /// Runs a trusted script of several statements (migrations, schema set-up). No parameters:
    /// never pass input here.
    public func executeScript(unsafeSQL sql: String) async throws {
        try await cancellable { connection, operation in try connection.executeScript(sql, operation: operation) }
    }

    /// Runs `body` inside BEGIN … COMMIT on this connection; ROLLBACK if it throws.
    public func transaction<R>(
        isolation: isolated (any Actor)? = #isolation,
        _ options: TransactionOptions = .init(),
        _ body: (PostgresConnection) async throws -> sending R
    ) async throws -> sending R {
        try await query(PostgresQuery(unsafeSQL: options.beginStatement))
        let result: R
        do {
            result = try await body(self)
        } catch {
            await rollback()
            throw error
        }
        do {
            try await query("COMMIT")
        } catch {
            await rollback()
            throw error
        }
        return result
    }

    /// ROLLBACK if a transaction is open; a failure marks the connection for the pool to discard.
    func rollback() async {
        guard !connection.isAbandoned else { return }
        _ = try? await abandonable { connection in connection.rollbackIfInTransaction() }
    }

    /// Runs blocking work for one operation, translating task cancellation into a server-side
    /// query cancel, and never waiting more than `cancelGrace` after the cancellation.
    func cancellable<T: Sendable>(_ work: @escaping @Sendable (PGConnection, UInt64) throws -> T) async throws -> T {
        let operation = operations.next()
        let connection = self.connection
        connection.prepare(operation: operation)
        return try await abandonable(
            onCancel: { [executor] in
                if connection.requestCancel(operation: operation) {
                    executor.submitCancel({ connection.sendCancel() }, done: { _ in })
                }
            },
            { connection in try work(connection, operation) })
    }

    /// Runs `work` on the pool's threads; a cancelled caller waits at most `cancelGrace`, then the
    /// connection is abandoned (see the type's comment).
    func abandonable<T: Sendable>(
        onCancel: @escaping @Sendable () -> Void = {}, _ work: @escaping @Sendable (PGConnection) throws -> T
    ) async throws -> T {
        let connection = self.connection
        try connection.checkNotAbandoned()
        let grace = cancelGrace
        return try await executor.run(
            abandoningAfter: grace,
            abandonedError: {
                connection.abandon()
                return Self.abandonedError(grace: grace)
            },
            onCancel: onCancel,
            whenAbandoned: { [reclaim] _ in reclaim(connection) },
            { try work(connection) })
    }

    private static func abandonedError(grace: Duration) -> PostgresError {
        PostgresError(
            code: .queryCancelled,
            message: "cancelled; the database did not stop the query within \(grace), so its connection is abandoned")
    }
}

/// How a transaction begins and how often it is retried.
public struct TransactionOptions: Sendable {
    public enum Isolation: String, Sendable {
        case readCommitted = "READ COMMITTED"
        case repeatableRead = "REPEATABLE READ"
        case serializable = "SERIALIZABLE"
    }

    public var isolation: Isolation
    public var readOnly: Bool
    /// Attempts in all when the transaction fails with a serialization failure or a deadlock
    /// (only `PostgresClient.withTransaction` retries: it needs a fresh transaction). 1: no retry.
    public var maxAttempts: Int

    public init(isolation: Isolation = .readCommitted, readOnly: Bool = false, maxAttempts: Int = 1) {
        self.isolation = isolation
        self.readOnly = readOnly
        self.maxAttempts = max(1, maxAttempts)
    }

    /// Retry serialization failures and deadlocks up to `attempts` times in all.
    public static func retrying(_ attempts: Int = 5, isolation: Isolation = .readCommitted) -> TransactionOptions {
        TransactionOptions(isolation: isolation, maxAttempts: attempts)
    }

    var beginStatement: String {
        "BEGIN ISOLATION LEVEL \(isolation.rawValue)" + (readOnly ? " READ ONLY" : "")
    }
}

/// Hands out operation ids so a late cancellation can never hit a later query.
final class OperationCounter: Sendable {
    private let value = Atomic<UInt64>(1)
    func next() -> UInt64 { value.wrappingAdd(1, ordering: .relaxed).newValue }
}
