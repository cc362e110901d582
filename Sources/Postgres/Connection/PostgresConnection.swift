import Synchronization

/// A connection leased from a `PostgresClient` for the duration of one `withConnection` or
/// `withTransaction` body. Use it only inside that body.
///
/// Cancelling the awaiting task while a query runs sends a cancel request to the server; the
/// query fails with `.queryCancelled` and the connection stays usable. If the server does not
/// answer within the pool's `cancelGrace` (it is hung, or the cancel request could not be sent),
/// the task stops waiting all the same: the call fails with `.queryCancelled`, the connection is
/// abandoned and is closed, never reused, when the server answers or the socket fails (the reactor
/// still reads it; for a blocking step, when libpq returns on its thread). The connection's state
/// machine (`ConnectionStateMachine`) decides all of this; this type only says what to run.
public struct PostgresConnection: Sendable {
    let connection: PGConnection
    let executor: BlockingExecutor

    init(connection: PGConnection, executor: BlockingExecutor) {
        self.connection = connection
        self.executor = executor
    }

    /// Runs one statement and returns all of its rows. It is sent from this task and answered
    /// through the reactor (`SocketReactor`): no thread waits for the server.
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresRows {
        let (connection, executor) = (self.connection, self.executor)
        return try await connection.driver.operation {
            try await connection.execute(query, executor: executor)
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
        try await cancellable { connection in try connection.executeScript(sql) }
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

    /// ROLLBACK if a transaction is open; a failure marks the connection for the pool to discard. It runs
    /// even for a cancelled task (within the grace): no cancel request, since it is the clean-up.
    func rollback() async {
        guard !connection.isAbandoned else { return }
        let connection = self.connection
        _ = try? await connection.driver.job(cancelOnServer: false, refuseIfCancelled: false) {
            connection.rollbackIfInTransaction()
        }
    }

    /// Runs blocking work for one operation on the pool's threads, translating task cancellation into a
    /// server-side query cancel, and never waiting more than `cancelGrace` after the cancellation.
    func cancellable<T: Sendable>(_ work: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        let connection = self.connection
        return try await connection.driver.job(cancelOnServer: true) { try work(connection) }
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

/// Hands out the ids of the pool's lease waiters.
final class OperationCounter: Sendable {
    private let value = Atomic<UInt64>(1)
    func next() -> UInt64 { value.wrappingAdd(1, ordering: .relaxed).newValue }
}
