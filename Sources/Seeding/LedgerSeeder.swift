import CivilDates
import Ledger
import Logging
import Postgres

/// Fills a database with synthetic purchases through COPY, writing exactly the rows the ledger
/// itself writes (users with their free items, store transactions, purchases, refund events,
/// journal entries, postings, grants and their history), so `shopledger reconcile` passes on a
/// seeded database. For benchmarks and demos; never run it against a real shop's database.
///
/// Each batch of purchases is one transaction holding a SHARE ROW EXCLUSIVE lock on
/// `journal_entries`, under which it reserves a block of journal entry ids from the identity
/// sequence; the ledger's own writers wait for the batch rather than collide with it.
public struct LedgerSeeder: Sendable {
    /// What a seed wrote.
    public struct Summary: Sendable, Hashable {
        public var users = 0
        public var purchases = 0
        public var productionPurchases = 0
        public var familyShared = 0
        public var refunds = 0
        public var reversals = 0
        public var revokes = 0
        public var journalEntries = 0
        public var firstDay: CalendarDate
        public var lastDay: CalendarDate

        /// Adds the counts of a batch.
        mutating func add(_ batch: Summary) {
            purchases += batch.purchases
            productionPurchases += batch.productionPurchases
            familyShared += batch.familyShared
            refunds += batch.refunds
            reversals += batch.reversals
            revokes += batch.revokes
            journalEntries += batch.journalEntries
        }
    }

    /// Stands in for a batch summary's days, which only the whole seed's summary uses.
    private static let summaryDay = CalendarDate(year: 1970, month: 1, day: 1)!

    /// The ledger tables a seed writes to.
    public static let tables = [
        "users", "store_transactions", "purchases", "refund_events", "journal_entries", "postings", "grants",
        "grant_events", "first_purchases",
    ]

    let client: PostgresClient
    /// What the catch-up after a seed forgets (`Invalidation.reportDays` from `Reports`: every
    /// cached report day, since the seeded purchases were recorded in the past).
    let invalidation: FirstPurchaseCatchUp.Invalidation
    let logger: Logger

    public init(
        client: PostgresClient, invalidating invalidation: FirstPurchaseCatchUp.Invalidation,
        logger: Logger = Logger(label: "shopledger.seed")
    ) {
        self.client = client
        self.invalidation = invalidation
        self.logger = logger
    }

    public func seed(_ configuration: SeedConfiguration) async throws -> Summary {
        try configuration.validate()
        let items = try await paidItems()
        guard !items.isEmpty else { throw SeedError("the catalog has no paid items to sell") }
        guard configuration.users * items.count >= configuration.purchases else {
            throw SeedError(
                "--users must be at least \((configuration.purchases + items.count - 1) / items.count): each user buys each of the \(items.count) paid items at most once"
            )
        }
        let names = SeedNames(seed: configuration.seed)
        let taken = try await client.query("SELECT EXISTS (SELECT 1 FROM users WHERE uid = \(names.uid(0))::text)")
            .single().decode(Bool.self, at: 0)
        guard !taken else {
            throw SeedError(
                "this database already holds the data of --seed \(configuration.seed); choose another --seed")
        }

        let clock = ContinuousClock()
        let began = clock.now
        let registeredAt = Int64(configuration.firstDay.daysSinceEpoch) * 86_400_000 - 86_400_000
        try await insertUsers(configuration.users, names: names, registeredAt: registeredAt)
        logger.info("seeded users", metadata: ["users": "\(configuration.users)", "elapsed": "\(clock.now - began)"])

        var summary = Summary(
            users: configuration.users, firstDay: configuration.firstDay, lastDay: configuration.lastDay)
        var generator = SyntheticLedger(
            configuration: configuration, itemTiers: items.map { $0.priceMilli <= 1_200_000 ? 0 : 1 })
        let perDay = generator.purchasesPerDay()
        // Batches go in on `parallelBatches` connections at once while the next one is generated:
        // the server's work (indexes, foreign keys) is most of the cost, and it uses both cores.
        try await withThrowingTaskGroup(of: Summary.self) { group in
            var batch: [SyntheticPurchase] = []
            var inFlight = 0
            func collect(_ done: Summary) {
                summary.add(done)
                logger.info(
                    "seeded purchases",
                    metadata: [
                        "purchases": "\(summary.purchases)", "of": "\(configuration.purchases)",
                        "elapsed": "\(clock.now - began)",
                    ])
            }
            for (offset, count) in perDay.enumerated() {
                batch += generator.purchases(onDay: offset, count: count)
                guard batch.count >= configuration.batchSize || offset == perDay.count - 1 else { continue }
                if inFlight == configuration.parallelBatches, let done = try await group.next() {
                    collect(done)
                    inFlight -= 1
                }
                let ready = batch
                group.addTask { try await insertBatch(ready, items: items, names: names) }
                inFlight += 1
                batch.removeAll(keepingCapacity: true)
            }
            for try await done in group { collect(done) }
        }
        // The seeded purchases were recorded in the past, before the catch-up's watermark: fold them all in.
        try await FirstPurchaseCatchUp(client: client, invalidating: invalidation, logger: logger).run(everything: true)
        for table in Self.tables { try await client.query(PostgresQuery(unsafeSQL: "ANALYZE \(table)")) }
        return summary
    }

    /// VACUUM (ANALYZE) of the seeded tables: sets the visibility map, so index-only scans (the
    /// first-time-buyer probes) need no heap visits, as on a database autovacuum has caught up with.
    public func vacuum() async throws {
        for table in Self.tables { try await client.query(PostgresQuery(unsafeSQL: "VACUUM (ANALYZE) \(table)")) }
    }

    // MARK: Steps

    struct PaidItem: Sendable {
        let item: ItemID
        let productId: String
        let priceMilli: Int64
    }

    private func paidItems() async throws -> [PaidItem] {
        let rows = try await client.query(
            """
            SELECT kind, item_index, product_id, price_milli FROM catalog_items
            WHERE product_id IS NOT NULL ORDER BY kind = 'background', item_index
            """)
        return try rows.compactMap { row in
            let (kind, index, productId, price) = try row.decode((String, Int, String, Int64).self)
            return ItemKind(rawValue: kind).map {
                PaidItem(item: ItemID(kind: $0, index: index), productId: productId, priceMilli: price)
            }
        }
    }

    /// The users, each with the free items' grants and their history, as `register` writes them.
    private func insertUsers(_ count: Int, names: SeedNames, registeredAt: Int64) async throws {
        try await client.withTransaction { connection in
            try await connection.copyFrom("COPY users (uid, profile, registered_at, updated_at) FROM STDIN") { writer in
                var buffer = CopyRowBuffer()
                for user in 0..<count {
                    buffer.text(names.uid(user))
                    buffer.text("{\"nick\":\"seed\(user)\"}")
                    buffer.timestamp(milliseconds: registeredAt)
                    buffer.timestamp(milliseconds: registeredAt)
                    try await buffer.endRow(to: writer)
                }
                try await buffer.flush(to: writer)
            }
            // The free item (index 0) of each kind, per user: its grant and the grant's history.
            func copyFreeItemRows(_ statement: PostgresQuery, _ columns: (inout CopyRowBuffer) -> Void) async throws {
                try await connection.copyFrom(statement) { writer in
                    var buffer = CopyRowBuffer()
                    for user in 0..<count {
                        for kind in ItemKind.allCases {
                            buffer.text(names.uid(user))
                            buffer.text(kind.rawValue)
                            buffer.int(0)
                            columns(&buffer)
                            buffer.timestamp(milliseconds: registeredAt)
                            try await buffer.endRow(to: writer)
                        }
                    }
                    try await buffer.flush(to: writer)
                }
            }
            try await copyFreeItemRows(
                "COPY grants (uid, item_kind, item_index, free, purchased_count, shared_count, updated_at) FROM STDIN"
            ) { buffer in
                buffer.text("t")
                buffer.int(0)
                buffer.int(0)
            }
            try await copyFreeItemRows(
                "COPY grant_event_rows (uid, item_kind, item_index, source, delta, cause, recorded_at) FROM STDIN"
            ) { buffer in
                buffer.text("free")
                buffer.int(1)
                buffer.text("register")
            }
        }
    }

    /// One batch of purchases and everything that follows from them, in one transaction; returns
    /// what it wrote.
    private func insertBatch(
        _ batch: [SyntheticPurchase], items: [PaidItem], names: SeedNames
    ) async throws -> Summary {
        let entryCount = batch.reduce(0) { $0 + $1.journalEntryCount }
        let rows = SeedRows(batch: batch, items: items, names: names)
        // Reserve a block of journal entry ids: under the locks no other session inserts a purchase,
        // journal entry or grant event (the writers of `ledger_entry_ids`), so none takes an id
        // between nextval and setval; once committed, the sequence is past the block and nobody
        // else will ever be given these ids.
        let firstEntryId = try await client.withTransaction { connection in
            try await connection.query(
                "LOCK TABLE purchases, journal_entry_rows, grant_event_rows IN SHARE ROW EXCLUSIVE MODE")
            let last = try await connection.query(
                """
                SELECT setval('ledger_entry_ids', nextval('ledger_entry_ids') + \(entryCount - 1))
                """
            ).single().decode(Int64.self, at: 0)
            return last - Int64(entryCount) + 1
        }
        try await client.withTransaction { connection in
            // Synthetic history is not news for anyone's webhook endpoint (migration 0016).
            try await connection.execute("SET LOCAL shopledger.webhook_events = 'off'")
            let clock = ContinuousClock()
            var timings: Logger.Metadata = [:]
            func timed(_ table: String, _ copy: () async throws -> Void) async throws {
                let began = clock.now
                try await copy()
                timings[table] = "\(clock.now - began)"
            }
            try await timed("store_transactions") { try await rows.copyStoreTransactions(on: connection) }
            try await timed("purchases") { try await rows.copyPurchases(firstEntryId: firstEntryId, on: connection) }
            try await timed("refund_events") { try await rows.copyRefundEvents(on: connection) }
            try await timed("journal_entries") {
                try await rows.copyJournalEntries(firstEntryId: firstEntryId, on: connection)
            }
            try await timed("postings") { try await rows.copyPostings(firstEntryId: firstEntryId, on: connection) }
            try await timed("grants") { try await rows.copyGrants(on: connection) }
            try await timed("grant_events") {
                try await rows.copyGrantEvents(firstEntryId: firstEntryId, on: connection)
            }
            logger.debug("copied a batch", metadata: timings)
        }
        var written = Summary(firstDay: Self.summaryDay, lastDay: Self.summaryDay)
        written.purchases = batch.count
        written.journalEntries = entryCount
        for purchase in batch {
            if purchase.book == .production && !purchase.familyShared { written.productionPurchases += 1 }
            if purchase.familyShared { written.familyShared += 1 }
            if purchase.refundedAt != nil { written.refunds += 1 }
            if purchase.reversedAt != nil { written.reversals += 1 }
            if purchase.revokedAt != nil { written.revokes += 1 }
        }
        return written
    }
}

/// The names a seed gives its users, transactions and events: `seed<N>-user<M>`, `seed<N>-<M>`.
struct SeedNames: Sendable {
    let seed: UInt64
    let prefix: String

    init(seed: UInt64) {
        self.seed = seed
        prefix = "seed\(seed)"
    }

    func uid(_ user: Int) -> String { "\(prefix)-user\(user)" }
    func transactionId(_ number: Int) -> String { "\(prefix)-\(number)" }
    func eventId(_ number: Int, _ kind: String) -> String { "\(prefix)-\(number)-\(kind)" }
}
