import Logging
import ServiceLifecycle
import Synchronization

/// A pool of libpq connections, run as a `Service`.
///
/// Connections are leased exclusively to one task (`withConnection`, `withTransaction`). A query blocks
/// no thread: it is sent without blocking and its answer read by the reactor thread (`SocketReactor`);
/// the few calls that still block (connecting, scripts, COPY, a clean-up ROLLBACK, closing) run on the
/// client's own threads. A connection that broke (server restart, network cut) is noticed when it is
/// next leased or when a call on it fails, and is replaced, so a PostgreSQL restart never needs a
/// service restart. A lease waits at most `leaseTimeout`.
///
/// A hung server (stopped, partitioned, out of disk) never holds a caller: cancelling the awaiting
/// task cancels the query, and if the server does not stop it within `cancelGrace` the task stops
/// waiting and the connection is abandoned (`ConnectionStateMachine`). The abandoned connection keeps
/// its slot until the server answers or the socket fails (the reactor still reads the round trip; a
/// blocking job returns), so a hung server never gets more connections than the slots; then it is
/// closed on the client's threads and its slot given to the next waiter.
public final class PostgresClient: Sendable, Service {
    public struct Configuration: Sendable {
        public var connection: ConnectionConfiguration
        /// Connections opened when the service starts and kept open.
        public var minimumConnections: Int
        public var maximumConnections: Int
        /// How long a lease waits for a free connection before failing with `.poolTimeout`.
        public var leaseTimeout: Duration
        /// How long a cancelled task still waits for its query after the cancel request was sent,
        /// before it abandons the connection (see the type's comment).
        public var cancelGrace: Duration
        /// How long `shutdown` waits for leased connections to come back before it closes the pool
        /// regardless (connections abandoned to a hung server are never waited for).
        public var shutdownTimeout: Duration

        public static let defaultCancelGrace: Duration = .milliseconds(250)

        public init(
            connection: ConnectionConfiguration, minimumConnections: Int = 1, maximumConnections: Int = 8,
            leaseTimeout: Duration = .seconds(10), cancelGrace: Duration = Configuration.defaultCancelGrace,
            shutdownTimeout: Duration = .seconds(30)
        ) {
            self.connection = connection
            self.maximumConnections = max(1, maximumConnections)
            self.minimumConnections = min(max(0, minimumConnections), self.maximumConnections)
            self.leaseTimeout = leaseTimeout
            self.cancelGrace = max(.zero, cancelGrace)
            self.shutdownTimeout = max(.zero, shutdownTimeout)
        }
    }

    /// A snapshot of the pool, for metrics.
    public struct Statistics: Sendable, Equatable {
        public var open: Int
        public var idle: Int
        public var leased: Int
        public var waiting: Int
    }

    public let configuration: Configuration
    let logger: Logger
    let executor: BlockingExecutor
    let operations = OperationCounter()
    typealias Waiter = CheckedContinuation<PoolGrant<PGConnection>, any Error>
    typealias State = PoolState<PGConnection, Waiter>
    let state = Mutex(State())

    public init(configuration: Configuration, logger: Logger = Logger(label: "shopledger.postgres")) {
        self.configuration = configuration
        self.logger = logger
        // What still blocks holds a slot (see `BlockingExecutor`): one thread per slot.
        self.executor = BlockingExecutor(numberOfThreads: configuration.maximumConnections)
    }

    public var statistics: Statistics {
        state.withLock { Statistics(open: $0.opened, idle: $0.idle.count, leased: $0.leased, waiting: $0.waiting) }
    }

    // MARK: Service

    /// Opens the minimum connections, then waits for graceful shutdown (or cancellation) and
    /// closes the pool: new leases are refused, leased connections are closed as they return.
    public func run() async throws {
        await openMinimumConnections()
        try? await gracefulShutdown()
        await shutdown()
    }

    private func openMinimumConnections() async {
        while let id = state.withLock({ $0.reserveSlot(max: configuration.minimumConnections) }) {
            do {
                let driver = makeDriver(slot: id)
                let connection = try await executor.run { [configuration] in
                    try PGConnection.connect(configuration.connection, id: id, driver: driver)
                }
                state.withLock { $0.slotOpened() }
                release(healthy: connection)
            } catch {
                state.withLock { $0.slotFailed() }
                logger.warning("could not open a database connection at start", metadata: ["error": "\(error)"])
                return
            }
        }
    }

    /// Refuses new leases, fails waiting ones, closes every connection as it becomes free and
    /// stops the thread pool. Idempotent.
    public func shutdown() async {
        let actions = state.withLock { $0.shutDown() }
        if actions.wasAlreadyShutDown { return }
        for waiter in actions.waitersToFail {
            waiter.resume(throwing: PostgresError(code: .poolClosed, message: "the database client is shutting down"))
        }
        for connection in actions.connectionsToClose { _ = try? await executor.run { connection.close() } }
        // Leased connections are closed by their holders' release; wait for them (bounded), but not
        // for those abandoned to a hung server: they are closed whenever it answers.
        let deadline = ContinuousClock.now + configuration.shutdownTimeout
        while state.withLock({ $0.opened > $0.abandoned }) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        let stuck = state.withLock { $0.opened }
        if stuck > 0 {
            logger.warning(
                "closing the database client with connections still blocked on the server",
                metadata: ["connections": "\(stuck)"])
        }
        await executor.shutdown(waitForRunningJobs: stuck == 0)
    }

    // MARK: Leasing

    /// Leases a connection for the duration of `body`.
    public func withConnection<R>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: (PostgresConnection) async throws -> sending R
    ) async throws -> sending R {
        let connection = try await lease()
        let leased = PostgresConnection(connection: connection, executor: executor)
        let result: R
        do {
            result = try await body(leased)
        } catch {
            await release(leased)
            throw error
        }
        await release(leased)
        return result
    }

    /// Runs `body` in a transaction on a leased connection: COMMIT when it returns, ROLLBACK when
    /// it throws. With `options.maxAttempts > 1`, serialization failures and deadlocks run the whole
    /// body again in a fresh transaction.
    public func withTransaction<R>(
        isolation: isolated (any Actor)? = #isolation,
        _ options: TransactionOptions = .init(),
        _ body: (PostgresConnection) async throws -> sending R
    ) async throws -> sending R {
        var attempt = 1
        while true {
            do {
                return try await withConnection { connection in try await connection.transaction(options, body) }
            } catch let error as PostgresError
                where error.isRetryableTransactionFailure && attempt < options.maxAttempts
            {
                attempt += 1
                logger.debug(
                    "retrying transaction",
                    metadata: ["attempt": "\(attempt)", "sqlstate": "\(error.sqlState?.rawValue ?? "")"])
            }
        }
    }

    /// Runs one statement on a leased connection.
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresRows {
        try await withConnection { connection in try await connection.query(query) }
    }

    /// Runs one statement and returns the number of rows it affected.
    @discardableResult
    public func execute(_ query: PostgresQuery) async throws -> Int {
        try await withConnection { connection in try await connection.execute(query) }
    }

    private func lease() async throws -> PGConnection {
        while true {
            let grant: State.Grant
            switch state.withLock({ $0.tryLease(max: configuration.maximumConnections) }) {
            case .fail:
                throw PostgresError(code: .poolClosed, message: "the database client has shut down")
            case .grant(let granted):
                grant = granted
            case .wait:
                grant = try await waitForGrant()
            }
            switch grant {
            case .connection(let connection):
                if connection.isAlive() { return connection }
                logger.info("replacing a broken database connection", metadata: ["connection": "\(connection.id)"])
                discard(connection)
            case .open(let id):
                return try await connect(slot: id)
            }
        }
    }

    private func waitForGrant() async throws -> State.Grant {
        let id = operations.next()
        let timeout = configuration.leaseTimeout
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await Task.sleep(for: timeout)
                if let waiter = self.state.withLock({ $0.removeWaiter(id) }) {
                    waiter.resume(
                        throwing: PostgresError(
                            code: .poolTimeout, message: "no database connection became free within \(timeout)"))
                }
            }
            defer { group.cancelAll() }
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    switch state.withLock({ $0.enqueue(id: id, waiter: continuation) }) {
                    case nil: break
                    case .cancelled: continuation.resume(throwing: CancellationError())
                    case .shutDown:
                        continuation.resume(
                            throwing: PostgresError(code: .poolClosed, message: "the database client has shut down"))
                    }
                }
            } onCancel: {
                if let waiter = self.state.withLock({ $0.cancelWaiter(id) }) {
                    waiter.resume(throwing: CancellationError())
                }
            }
        }
    }

    /// Opens a connection in a leased slot, as one operation of its driver: a cancelled caller waits at
    /// most `cancelGrace` for libpq's connect; then the slot is abandoned to it, and given up when it returns.
    private func connect(slot id: Int) async throws -> PGConnection {
        let configuration = configuration
        let driver = makeDriver(slot: id)
        do {
            return try await driver.job(cancelOnServer: false, refuseIfCancelled: false) {
                try PGConnection.connect(configuration.connection, id: id, driver: driver)
            }
        } catch {
            if driver.isAbandoned {
                state.withLock { $0.abandonLease() }
                throw CancellationError()
            }
            if let waiter = state.withLock({ $0.connectFailed() }) { waiter.resume(returning: .open(id: id)) }
            throw error
        }
    }

    /// The driver of the connection in slot `id`. Once an abandoned connection is closed (on the
    /// client's threads) its slot is freed.
    private func makeDriver(slot id: Int) -> ConnectionDriver {
        ConnectionDriver(executor: executor, cancelGrace: configuration.cancelGrace) { [weak self] in
            self?.reclaimedAbandoned(slot: id)
        }
    }

    /// Returns a connection: to a waiter, to the idle list, or closed when it is not reusable.
    /// A connection abandoned to a hung server is left alone: `reclaimAbandoned` closes it.
    func release(_ leased: PostgresConnection) async {
        let connection = leased.connection
        if connection.isAbandoned {
            state.withLock { $0.abandonLease() }
            return
        }
        // A body left a transaction open (or a cancel interrupted one): roll it back first. The
        // status check is a local read; only an actual ROLLBACK goes to the pool's threads, and it
        // abandons the connection too if the server does not answer a cancelled task in time.
        if !connection.isBroken && !connection.isCondemned && connection.transactionStatus != .idle {
            await leased.rollback()
            if connection.isAbandoned {
                state.withLock { $0.abandonLease() }
                return
            }
        }
        guard !connection.isBroken, !connection.isCondemned, connection.transactionStatus == .idle else {
            discard(connection)
            return
        }
        release(healthy: connection)
    }

    private func release(healthy connection: PGConnection) {
        switch state.withLock({ $0.release(connection) }) {
        case .handOver(let waiter, let grant): waiter.resume(returning: grant)
        case .idled: break
        case .close: discard(connection)
        }
    }

    /// Closes a connection that is not reusable (on the pool's threads: `PQfinish` does not wait
    /// for the server) and gives its slot to the next waiter.
    private func discard(_ connection: PGConnection) {
        executor.submit { connection.close() }
        if let waiter = state.withLock({ $0.closed(max: configuration.maximumConnections) }) {
            waiter.waiter.resume(returning: .open(id: waiter.slot))
        }
    }

    /// An abandoned connection (or connect) has ended and is closed: free the slot it kept.
    private func reclaimedAbandoned(slot id: Int) {
        logger.info(
            "closed a database connection abandoned after an unanswered cancel", metadata: ["connection": "\(id)"])
        closeAbandonedSlot()
    }

    private func closeAbandonedSlot() {
        if let waiter = state.withLock({ $0.abandonedClosed(max: configuration.maximumConnections) }) {
            waiter.waiter.resume(returning: .open(id: waiter.slot))
        }
    }
}
