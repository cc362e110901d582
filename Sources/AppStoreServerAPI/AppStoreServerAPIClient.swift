import AsyncHTTPClient
import Foundation
import Logging
import NIOHTTP1
import Receipts

/// A client of Apple's App Store Server API.
///
/// Bearer tokens are signed here with the in-app purchase key and reused until shortly before they
/// expire; requests wait for Apple's per-endpoint limit, time out, and are retried on 429 (at the
/// `Retry-After` Apple gives, a UNIX time in milliseconds) and 5xx with backoff. Transaction look-ups
/// ask production first and the sandbox when production does not know the id.
///
/// Nothing from the network is trusted as it comes: every signed transaction and notification in an
/// answer goes through `prover` (the same ``ReceiptVerifier`` that checks what clients send), and one
/// that does not verify fails the whole call with ``AppStoreServerAPIError/Code/unverifiedPayload``.
///
/// A call made inside a customer's request goes through ``within(_:)``: it then ends by the request's
/// deadline whatever Apple does (no attempt, backoff or `Retry-After` wait past it) and leaves a share of
/// Apple's quota to background work. Background work (sync, pricing) uses the client as configured.
/// Apple's "not found" for a transaction id is remembered for
/// ``AppStoreServerAPIConfiguration/notFoundMemory`` (asked again sooner, the answer is the same).
///
/// Errors: ``AppStoreServerAPIError``, or `CancellationError` when the calling task is cancelled.
public struct AppStoreServerAPIClient: Sendable {
    public let configuration: AppStoreServerAPIConfiguration
    let prover: any PurchaseProver
    let httpClient: HTTPClient
    let signer: BearerTokenSigner
    let limiter: RateLimiter
    let notFound: NotFoundMemory
    let logger: Logger
    /// Counts requests and failures (the server's metrics), when given.
    let observer: (any AppStoreAPIObserver)?
    /// Set by ``within(_:)``: every call ends by then.
    private(set) var deadline: ContinuousClock.Instant?
    /// What attempts, backoffs and `Retry-After` waits are timed on (tests pass a clock they move; a
    /// ``deadline`` is one of its instants).
    let clock: any Clock<Duration>
    /// `clock`'s now, as the instant deadlines are.
    let now: @Sendable () -> ContinuousClock.Instant
    /// The wall clock's now, against Apple's `Retry-After` (a UNIX time).
    let date: @Sendable () -> Date
    /// Whether AsyncHTTPClient's own deadline (on the wall clock) also ends an attempt: with another clock
    /// than the wall clock, that clock alone times an attempt out.
    let transportDeadline: Bool

    /// Largest answer body read, in bytes.
    static let maxResponseBytes = 4 * 1024 * 1024
    /// A paginated endpoint stops after this many pages (a server that never says `hasMore: false`).
    static let maxPages = 10_000

    /// - Parameters:
    ///   - httpClient: the HTTP client to use; the process-wide shared one by default.
    ///   - observer: told of every request to Apple and every failed call (metrics).
    public init(
        configuration: AppStoreServerAPIConfiguration,
        prover: any PurchaseProver,
        httpClient: HTTPClient = .shared,
        logger: Logger = Logger(label: "shopledger.appstore"),
        observer: (any AppStoreAPIObserver)? = nil
    ) throws(AppStoreServerAPIError) {
        try self.init(
            configuration: configuration, prover: prover, httpClient: httpClient, logger: logger, observer: observer,
            clock: ContinuousClock(), date: { Date() })
    }

    /// A client whose waits and timeouts run on `clock` and whose wall clock is `date` (tests move both).
    package init<C: Clock<Duration>>(
        configuration: AppStoreServerAPIConfiguration,
        prover: any PurchaseProver,
        httpClient: HTTPClient = .shared,
        logger: Logger = Logger(label: "shopledger.appstore"),
        observer: (any AppStoreAPIObserver)? = nil,
        clock: C,
        date: @escaping @Sendable () -> Date
    ) throws(AppStoreServerAPIError) where C.Instant == ContinuousClock.Instant {
        try configuration.validate()
        self.clock = clock
        self.now = { clock.now }
        self.date = date
        self.transportDeadline = C.self == ContinuousClock.self
        self.configuration = configuration
        self.prover = prover
        self.httpClient = httpClient
        self.logger = logger
        self.observer = observer
        self.signer = BearerTokenSigner(
            key: configuration.signingKey, keyId: configuration.keyId, issuerId: configuration.issuerId,
            bundleId: configuration.bundleId, lifetime: configuration.tokenLifetime)
        self.limiter = RateLimiter(limits: configuration.rateLimits, clock: clock)
        self.notFound = NotFoundMemory(lifetime: configuration.notFoundMemory)
    }

    /// This client (the same token, rate limits and memory) for calls made inside a request that must
    /// be answered by `deadline`: each call gives up by then with ``AppStoreServerAPIError/Code/timeout``
    /// (or ``AppStoreServerAPIError/Code/rateLimited`` when Apple, or our share of its quota, asks for
    /// a wait past it), and leaves ``RateLimits/backgroundShare`` of Apple's quota to background work.
    public func within(_ deadline: ContinuousClock.Instant) -> AppStoreServerAPIClient {
        var client = self
        client.deadline = min(deadline, self.deadline ?? deadline)
        return client
    }

    // MARK: Transactions

    /// Get Transaction Info: one transaction, verified.
    ///
    /// - Parameter environment: the environment the transaction is known to be from (asked alone); by
    ///   default production, then the sandbox on "not found".
    public func transactionInfo(
        _ transactionId: String, in environment: StoreEnvironment? = nil
    ) async throws -> VerifiedTransactions {
        let segment = try pathSegment(transactionId)
        return try await inTransactionEnvironments(transactionId, only: environment) { environment in
            let answer = try await send(
                .GET, "/inApps/v1/transactions/\(segment)", endpoint: .transactionInfo,
                environment: environment, as: Wire.TransactionInfoResponse.self)
            return try await verifyTransactions([answer.signedTransactionInfo], from: environment)
        }
    }

    /// Get Transaction History v2: every transaction of the customer who made `transactionId` (any of
    /// theirs), all pages (`revision` while `hasMore`), oldest first.
    ///
    /// - Parameters:
    ///   - productTypes: Apple's `productType` filter (`NON_CONSUMABLE`, ...); all when empty.
    ///   - environment: the environment the transaction is known to be from (asked alone); by default
    ///     production, then the sandbox on "not found".
    public func transactionHistory(
        _ transactionId: String, productTypes: [String] = [], in environment: StoreEnvironment? = nil
    ) async throws -> VerifiedTransactions {
        let segment = try pathSegment(transactionId)
        return try await inTransactionEnvironments(transactionId, only: environment) { environment in
            let signed = try await pagedHistory(
                "/inApps/v2/history/\(segment)",
                baseQuery: [("sort", "ASCENDING")] + productTypes.map { ("productType", $0) },
                endpoint: .transactionHistory, environment: environment)
            return try await verifyTransactions(signed, from: environment)
        }
    }

    /// Get Refund History v2: every refunded transaction of the customer who made `transactionId`, all pages.
    ///
    /// - Parameter environment: the environment the transaction is known to be from (asked alone); by
    ///   default production, then the sandbox on "not found".
    public func refundHistory(
        _ transactionId: String, in environment: StoreEnvironment? = nil
    ) async throws
        -> VerifiedTransactions
    {
        let segment = try pathSegment(transactionId)
        return try await inTransactionEnvironments(transactionId, only: environment) { environment in
            let signed = try await pagedHistory(
                "/inApps/v2/refund/lookup/\(segment)", baseQuery: [], endpoint: .refundHistory, environment: environment
            )
            return try await verifyTransactions(signed, from: environment)
        }
    }

    /// Look Up Order ID: the transactions of the order id on a customer's App Store receipt email.
    public func lookUpOrder(_ orderId: String) async throws -> OrderLookup {
        let segment = try pathSegment(orderId)
        return try await inTransactionEnvironments("order:" + orderId) { environment in
            let answer = try await send(
                .GET, "/inApps/v1/lookup/\(segment)", endpoint: .orderLookup, environment: environment,
                as: Wire.OrderLookupResponse.self)
            let verified = try await verifyTransactions(answer.signedTransactions ?? [], from: environment)
            return OrderLookup(isValid: answer.status == 0, result: verified)
        }
    }

    // MARK: Notifications

    /// Get Notification History: every notification Apple sent (or tried to) between the dates, all pages
    /// (`paginationToken`), each verified. Apple keeps 180 days in production and 30 in the sandbox
    /// (``notificationHistoryRetention(in:)``) and refuses an older `start` (errorCode 4000012).
    ///
    /// - Parameter environment: whose history; by default the configured environment (production, or
    ///   the sandbox for a sandbox-only configuration). ``notificationEnvironments`` lists those worth asking.
    /// - Returns: everything, or nothing when any page fails; ``notificationHistoryPages(from:to:onlyFailures:in:)``
    ///   hands over each page as it arrives.
    public func notificationHistory(
        from start: Date, to end: Date = Date(), onlyFailures: Bool = false, in environment: StoreEnvironment? = nil
    )
        async throws -> [NotificationHistoryEntry]
    {
        var entries: [NotificationHistoryEntry] = []
        for try await page in notificationHistoryPages(
            from: start, to: end, onlyFailures: onlyFailures, in: environment)
        {
            entries += page
        }
        return entries
    }

    /// Get Notification History a page at a time, each page's notifications verified before it is
    /// handed over: a caller that stores each page as it arrives keeps the pages before one that fails
    /// (the iteration then throws, and ends).
    public func notificationHistoryPages(
        from start: Date, to end: Date = Date(), onlyFailures: Bool = false, in environment: StoreEnvironment? = nil
    ) -> NotificationHistoryPages {
        NotificationHistoryPages(
            client: self, environment: environment ?? configuration.primaryEnvironment,
            request: Wire.NotificationHistoryRequest(
                startDate: Int64(start.timeIntervalSince1970 * 1000), endDate: Int64(end.timeIntervalSince1970 * 1000),
                onlyFailures: onlyFailures ? true : nil))
    }

    /// How far back Apple keeps an environment's notification history: 180 days in production, 30 days
    /// in the sandbox. A `start` before that is refused with errorCode 4000012.
    public static func notificationHistoryRetention(in environment: StoreEnvironment) -> TimeInterval {
        (environment == .production ? 180 : 30) * 86_400
    }

    /// The pages of one Get Notification History (``notificationHistoryPages(from:to:onlyFailures:in:)``):
    /// each element one page's verified entries, in Apple's order.
    public struct NotificationHistoryPages: AsyncSequence, Sendable {
        public typealias Element = [NotificationHistoryEntry]

        let client: AppStoreServerAPIClient
        let environment: StoreEnvironment
        let request: Wire.NotificationHistoryRequest

        public func makeAsyncIterator() -> Iterator { Iterator(pages: self) }

        public struct Iterator: AsyncIteratorProtocol {
            let pages: NotificationHistoryPages
            var token: String?
            var seenTokens: Set<String> = []
            var fetched = 0
            var finished = false
            /// A failure found after a page was verified: thrown by the next call, so the page is kept.
            var pendingFailure: AppStoreServerAPIError?

            /// The next page; nil after the last one (or after a failure, which is thrown once).
            public mutating func next() async throws -> [NotificationHistoryEntry]? {
                guard !finished else { return nil }
                finished = true  // Until this page is through: a throw below ends the iteration.
                if let pendingFailure { throw pendingFailure }
                guard fetched < AppStoreServerAPIClient.maxPages else {
                    throw AppStoreServerAPIError(
                        .unexpectedResponse, "notification history ran over \(AppStoreServerAPIClient.maxPages) pages")
                }
                let client = pages.client
                let environment = pages.environment
                let page = try await client.send(
                    .POST, "/inApps/v1/notifications/history", query: token.map { [("paginationToken", $0)] } ?? [],
                    body: try JSONEncoder().encode(pages.request), endpoint: .notificationHistory,
                    environment: environment, as: Wire.NotificationHistoryResponse.self)
                fetched += 1
                var entries: [NotificationHistoryEntry] = []
                for item in page.notificationHistory ?? [] {
                    let notification = try await client.verifyNotification(item.signedPayload, from: environment)
                    entries.append(
                        NotificationHistoryEntry(
                            notification: notification, signedPayload: item.signedPayload,
                            sendAttempts: (item.sendAttempts ?? []).map {
                                NotificationSendAttempt(
                                    date: $0.attemptDate.map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) },
                                    result: $0.sendAttemptResult ?? "UNKNOWN")
                            }))
                }
                if page.hasMore == true {
                    if let next = page.paginationToken, !next.isEmpty, seenTokens.insert(next).inserted {
                        token = next
                    } else {
                        pendingFailure = AppStoreServerAPIError(
                            .unexpectedResponse, "notification history says hasMore but gives no new paginationToken")
                    }
                    finished = false
                }
                return entries
            }
        }
    }

    /// Request a Test Notification: Apple sends a `TEST` notification to the app's configured URL.
    /// - Returns: the token to ask ``testNotificationStatus(_:)`` with.
    public func requestTestNotification() async throws -> String {
        try await send(
            .POST, "/inApps/v1/notifications/test", endpoint: .testNotification,
            environment: configuration.primaryEnvironment, as: Wire.SendTestNotificationResponse.self
        ).testNotificationToken
    }

    /// Get Test Notification Status: the test notification (verified) and Apple's delivery attempts.
    public func testNotificationStatus(_ token: String) async throws -> TestNotificationStatus {
        let environment = configuration.primaryEnvironment
        let segment = try pathSegment(token)
        let answer = try await send(
            .GET, "/inApps/v1/notifications/test/\(segment)", endpoint: .testNotificationStatus,
            environment: environment, as: Wire.CheckTestNotificationResponse.self)
        let notification = try await verifyNotification(answer.signedPayload, from: environment)
        let attempts = (answer.sendAttempts ?? []).map { attempt in
            TestNotificationStatus.Attempt(
                date: attempt.attemptDate.map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) },
                result: attempt.sendAttemptResult ?? "UNKNOWN")
        }
        return TestNotificationStatus(notification: notification, attempts: attempts)
    }

    /// The environments whose notifications the configuration covers: production and the sandbox
    /// (TestFlight and App Review), or the sandbox alone.
    public var notificationEnvironments: [StoreEnvironment] { configuration.transactionEnvironments }

    // MARK: Helpers

    /// Runs `body` in production, then in the sandbox when production does not know the id (Apple's
    /// advice: TestFlight and App Review purchases are sandbox purchases). An environment that said
    /// "not found" for `id` lately is not asked again (``NotFoundMemory``).
    func inTransactionEnvironments<T>(
        _ id: String, only environment: StoreEnvironment? = nil, _ body: (StoreEnvironment) async throws -> T
    ) async throws -> T {
        let environments = environment.map { [$0] } ?? configuration.transactionEnvironments
        for (index, environment) in environments.enumerated() {
            do {
                guard !notFound.remembers(id, in: environment) else {
                    throw AppStoreServerAPIError(
                        .apiError, "Apple said lately that it does not know \(id) in \(environment)", httpStatus: 404,
                        apiErrorCode: AppStoreServerAPIError.APIErrorCode.transactionIdNotFound)
                }
                do {
                    return try await body(environment)
                } catch let error as AppStoreServerAPIError where error.isNotFound {
                    notFound.remember(id, in: environment)
                    throw error
                }
            } catch let error as AppStoreServerAPIError where error.isNotFound && index < environments.count - 1 {
                logger.debug(
                    "not found; asking the next environment",
                    metadata: ["environment": "\(environment)", "error": "\(error)"])
            }
        }
        // Unreachable: the last environment's error is thrown from the loop.
        throw AppStoreServerAPIError(.configuration, "no environment to ask")
    }

    /// The signed transactions of every page of a v2 history endpoint.
    func pagedHistory(
        _ path: String, baseQuery: [(String, String)], endpoint: RateLimits.Endpoint, environment: StoreEnvironment
    ) async throws -> [String] {
        var signed: [String] = []
        var revision: String?
        var seenRevisions: Set<String> = []
        for _ in 0..<Self.maxPages {
            let page = try await send(
                .GET, path, query: baseQuery + (revision.map { [("revision", $0)] } ?? []), endpoint: endpoint,
                environment: environment, as: Wire.HistoryResponse.self)
            signed += page.signedTransactions ?? []
            guard page.hasMore == true else { return signed }
            guard let next = page.revision, !next.isEmpty, seenRevisions.insert(next).inserted else {
                throw AppStoreServerAPIError(.unexpectedResponse, "\(path) says hasMore but gives no new revision")
            }
            revision = next
        }
        throw AppStoreServerAPIError(.unexpectedResponse, "\(path) ran over \(Self.maxPages) pages")
    }

    /// Verifies each signed transaction. Authentic ones of a product type the shop does not sell are
    /// set aside; anything else that does not verify, or that comes from another environment than the
    /// one asked, fails the call.
    func verifyTransactions(
        _ signed: [String], from environment: StoreEnvironment
    ) async throws
        -> VerifiedTransactions
    {
        var transactions: [VerifiedTransaction] = []
        var skipped: [ReceiptRefusal] = []
        for jws in signed {
            do throws(ReceiptRefusal) {
                let transaction = try await prover.verifyTransaction(jws)
                guard transaction.environment == environment else {
                    throw ReceiptRefusal(
                        .wrongEnvironment, "the \(environment) server sent a \(transaction.environment) transaction")
                }
                transactions.append(transaction)
            } catch  where error.reason == .unsupportedProductType {
                // The verifier refuses a product type only after the chain and signature verified.
                skipped.append(error)
            } catch {
                throw AppStoreServerAPIError(
                    .unverifiedPayload, "a signed transaction from the \(environment) server did not verify: \(error)",
                    refusal: error)
            }
        }
        return VerifiedTransactions(environment: environment, transactions: transactions, skipped: skipped)
    }

    func verifyNotification(
        _ signedPayload: String, from environment: StoreEnvironment
    ) async throws
        -> VerifiedNotification
    {
        let notification: VerifiedNotification
        do throws(ReceiptRefusal) {
            notification = try await prover.verifyNotification(signedPayload)
            guard notification.environment == environment else {
                throw ReceiptRefusal(
                    .wrongEnvironment, "the \(environment) server sent a \(notification.environment) notification")
            }
        } catch {
            throw AppStoreServerAPIError(
                .unverifiedPayload, "a signed notification from the \(environment) server did not verify: \(error)",
                refusal: error)
        }
        return notification
    }

    /// `value` as one URL path segment; ids are short and printable.
    func pathSegment(_ value: String) throws(AppStoreServerAPIError) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        guard (1...128).contains(value.utf8.count), value.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 }),
            let encoded = value.addingPercentEncoding(withAllowedCharacters: allowed)
        else {
            throw AppStoreServerAPIError(.invalidInput, "an id must be 1–128 printable ASCII characters")
        }
        return encoded
    }
}
