import Foundation
import Postgres
import Receipts
import Synchronization

/// Group commit for new purchases: purchases that arrive while the database is busy with earlier
/// ones are recorded together, by one statement (and one commit) for up to `maxBatch` of them.
///
/// - A purchase that finds fewer than `maxInFlight` purchase statements running goes at once, alone
///   (the single statement): an idle server adds no latency.
/// - One at a time by default: at 8 connections, where the server and PostgreSQL share two busy
///   cores, letting 4 statements run at once left most purchases alone (~170–190 µs of PostgreSQL
///   CPU each), while one at a time gathers those that arrive during a statement and its commit
///   (~95–120 µs each; LoadBench's CPU per request, docs/measurements.md).
/// - Otherwise it waits in a queue; whenever a running statement finishes, the queue's first
///   `maxBatch` purchases (distinct transactions) go as one statement.
/// - Each caller is answered only after the statement that recorded its purchase committed, with its
///   own result (recorded, or not inserted: then `recordPurchase` classifies it as before).
/// - If a batch fails (a refund event came first for one of them, two first purchases of one user
///   with different appAccountTokens, a deadlock, a bad value, …) its purchases are retried one by one with the single statement, so each gets its own outcome.
public struct GroupCommit: Sendable, Hashable {
    /// The most purchases one statement records; 1 turns group commit off.
    public var maxBatch: Int
    /// How many purchase statements may run at once before purchases queue for a batch.
    public var maxInFlight: Int

    public init(maxBatch: Int = 32, maxInFlight: Int = 1) {
        self.maxBatch = max(1, maxBatch)
        self.maxInFlight = max(1, maxInFlight)
    }

    /// Every purchase alone, as before group commit.
    public static let off = GroupCommit(maxBatch: 1)
}

/// The queue behind `GroupCommit`.
///
/// A waiting caller whose task is cancelled (the server's request deadline, a hung database) is
/// answered at once with `CancellationError` and leaves the queue; if its batch is already running,
/// the batch goes on for the others and its result for this caller is dropped (the purchase may be
/// recorded, as with an abandoned single statement: posting it again finds it).
final class PurchaseBatcher: Sendable {
    typealias Outcome = Result<InsertResult, any Error>

    private struct Queued {
        let id: UInt64
        let input: PurchaseInput
    }

    private enum Ticket {
        /// Run alone now, in a slot of your own.
        case lead
        /// Your batch ran (or you were cancelled): the outcome for you.
        case done(Outcome)
    }

    private struct State {
        var inFlight = 0
        var nextID: UInt64 = 0
        var queue: [Queued] = []
        /// The continuation of every caller that waits (queued, or in a running batch).
        var waiting: [UInt64: CheckedContinuation<Ticket, Never>] = [:]
        /// Callers cancelled before they could wait.
        var cancelledEarly: Set<UInt64> = []
        var statistics = Statistics()
    }

    /// What the batcher did, for tests and benchmarks.
    struct Statistics: Sendable, Hashable {
        /// Statements that recorded several purchases, and how many they recorded in all.
        var batches = 0
        var batchedPurchases = 0
        var largestBatch = 0
        /// Batches that failed and were retried one by one.
        var failedBatches = 0
    }

    var statistics: Statistics { state.withLock { $0.statistics } }

    let configuration: GroupCommit
    private let client: PostgresClient
    private let state = Mutex(State())

    init(configuration: GroupCommit, client: PostgresClient) {
        self.configuration = configuration
        self.client = client
    }

    /// Inserts a new purchase (alone or in a batch); throws what the single statement throws.
    func insert(_ input: PurchaseInput) async throws -> InsertResult {
        guard configuration.maxBatch > 1 else { return try await single(input) }
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        let ticket = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Ticket, Never>) in
                let now = state.withLock { state -> Ticket? in
                    if state.cancelledEarly.remove(id) != nil { return .done(.failure(CancellationError())) }
                    if state.inFlight < configuration.maxInFlight {
                        state.inFlight += 1
                        return .lead
                    }
                    state.queue.append(Queued(id: id, input: input))
                    state.waiting[id] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<Ticket, Never>? in
                guard let continuation = state.waiting.removeValue(forKey: id) else {
                    state.cancelledEarly.insert(id)
                    return nil
                }
                state.queue.removeAll { $0.id == id }
                return continuation
            }
            continuation?.resume(returning: .done(.failure(CancellationError())))
        }
        // A cancel that came after the answer leaves its mark; nothing will read it.
        state.withLock { _ = $0.cancelledEarly.remove(id) }
        switch ticket {
        case .lead:
            defer { slotFinished() }
            return try await single(input)
        case .done(let outcome):
            return try outcome.get()
        }
    }

    private func single(_ input: PurchaseInput) async throws -> InsertResult {
        try await client.query(LedgerStore.insertPurchase(input, lockingTransaction: false)).single().insertResult()
    }

    /// Answers a waiting caller, unless it was answered already (cancelled).
    private func deliver(_ id: UInt64, _ outcome: Outcome) {
        let continuation = state.withLock { $0.waiting.removeValue(forKey: id) }
        continuation?.resume(returning: .done(outcome))
    }

    private func isWaiting(_ id: UInt64) -> Bool { state.withLock { $0.waiting[id] != nil } }

    /// A statement finished: its slot takes the next batch, or is freed when nobody waits.
    private func slotFinished() {
        let batch = state.withLock { state -> [Queued] in
            let batch = Self.takeBatch(from: &state.queue, max: configuration.maxBatch)
            if batch.isEmpty { state.inFlight -= 1 }
            return batch
        }
        guard !batch.isEmpty else { return }
        Task { await run(batch) }
    }

    /// The first `max` queued purchases of distinct transactions; a second purchase of the same
    /// transaction waits for the next batch (one statement cannot both insert and find it).
    private static func takeBatch(from queue: inout [Queued], max: Int) -> [Queued] {
        var batch: [Queued] = []
        var keys: Set<[String]> = []
        var rest: [Queued] = []
        for queued in queue {
            let key = [queued.input.store, queued.input.environment, queued.input.transactionId]
            if batch.count < max, keys.insert(key).inserted {
                batch.append(queued)
            } else {
                rest.append(queued)
            }
        }
        queue = rest
        return batch
    }

    private func run(_ batch: [Queued]) async {
        defer { slotFinished() }
        if batch.count > 1,
            let results = try? await client.query(LedgerStore.insertPurchases(batch.map(\.input))).map({
                try $0.insertResult()
            }),
            results.count == batch.count
        {
            state.withLock { state in
                state.statistics.batches += 1
                state.statistics.batchedPurchases += batch.count
                state.statistics.largestBatch = max(state.statistics.largestBatch, batch.count)
            }
            for (queued, result) in zip(batch, results) { deliver(queued.id, .success(result)) }
            return
        }
        // Alone, or the batch failed: one by one, each with its own outcome (none for callers who
        // have gone).
        if batch.count > 1 { state.withLock { $0.statistics.failedBatches += 1 } }
        for queued in batch where isWaiting(queued.id) {
            let outcome: Outcome
            do {
                outcome = .success(try await single(queued.input))
            } catch {
                outcome = .failure(error)
            }
            deliver(queued.id, outcome)
        }
    }
}

extension LedgerStore {
    /// The statement that records several new purchases at once (group commit): the single
    /// statement's work over `unnest`ed arrays, one result row per input in input order. Rows are
    /// written in key order (purchases and markers by transaction, grants by user and item, one
    /// upsert per grant), so two batches take their row locks in the same order and cannot
    /// deadlock each other. The inputs must be distinct transactions.
    static func insertPurchases(_ inputs: [PurchaseInput]) -> PostgresQuery {
        func column(_ value: (PurchaseInput) -> String?) -> TextArray { TextArray(inputs.map(value)) }
        let store = column { $0.store }
        let environment = column { $0.environment }
        let transactionId = column { $0.transactionId }
        let originalTransactionId = column { $0.originalTransactionId }
        let uid = column { $0.uid }
        let productId = column { $0.productId }
        let book = column { $0.book }
        let purchasedAt = column { Self.text($0.purchaseDate) }
        let priceMilli = column { $0.priceMilli.map(String.init) }
        let currency = column { $0.currency }
        let storefront = column { $0.storefront }
        let ownership = column { $0.ownership }
        let appAccountToken = column { $0.appAccountToken?.uuidString.lowercased() }
        let signedAt = column { Self.text($0.signedDate) }
        let evidence = column { $0.transaction.evidenceSHA256Hex }
        let claimsToken = column { $0.claimsAccountToken ? "true" : "false" }
        return """
            WITH input AS (
                SELECT i.n, i.store, i.environment, i.transaction_id, i.original_transaction_id, i.uid, i.product_id,
                       i.book, i.purchased_at::timestamptz AS purchased_at, i.price_milli::bigint AS price_milli,
                       i.currency, i.storefront, i.ownership, i.app_account_token::uuid AS app_account_token,
                       i.signed_at::timestamptz AS signed_at, decode(i.evidence_hex, 'hex') AS evidence_sha256,
                       i.claims_token::boolean AS claims_token
                FROM unnest(\(store)::text[], \(environment)::text[], \(transactionId)::text[],
                            \(originalTransactionId)::text[], \(uid)::text[], \(productId)::text[], \(book)::text[],
                            \(purchasedAt)::text[], \(priceMilli)::text[], \(currency)::text[], \(storefront)::text[],
                            \(ownership)::text[], \(appAccountToken)::text[], \(signedAt)::text[], \(evidence)::text[],
                            \(claimsToken)::text[])
                     WITH ORDINALITY AS i (store, environment, transaction_id, original_transaction_id, uid, product_id,
                                           book, purchased_at, price_milli, currency, storefront, ownership,
                                           app_account_token, signed_at, evidence_hex, claims_token, n)
            ),
            item AS (SELECT i.n, c.kind, c.item_index FROM catalog_items c JOIN input i ON c.product_id = i.product_id),
            account AS (SELECT i.n, u.uid, u.app_account_token AS known_token FROM users u JOIN input i ON u.uid = i.uid),
            purchase AS (
                INSERT INTO purchases (store, environment, transaction_id, original_transaction_id, uid, product_id,
                    item_kind, item_index, book, purchased_at, price_milli, currency, storefront, ownership,
                    app_account_token, signed_at, evidence_sha256)
                SELECT i.store, i.environment, i.transaction_id, i.original_transaction_id, i.uid, i.product_id,
                    item.kind, item.item_index, i.book, i.purchased_at, i.price_milli, i.currency, i.storefront,
                    i.ownership, i.app_account_token, i.signed_at, i.evidence_sha256
                FROM input i JOIN item USING (n) JOIN account a USING (n)
                WHERE coalesce(a.known_token = i.app_account_token, true)
                ORDER BY i.transaction_id, i.store, i.environment
                ON CONFLICT (store, environment, transaction_id) DO NOTHING
                RETURNING store, environment, transaction_id, uid, item_kind, item_index, ownership, app_account_token,
                    recorded_at
            ),
            \(unsafeSQL: claimAccountTokens),
            marker AS (
                INSERT INTO store_transactions (store, environment, transaction_id)
                SELECT store, environment, transaction_id FROM purchase ORDER BY transaction_id, store, environment
            ),
            owned AS (
                INSERT INTO grants AS g (uid, item_kind, item_index, purchased_count, shared_count)
                SELECT uid, item_kind, item_index, count(*) FILTER (WHERE ownership = 'PURCHASED'),
                       count(*) FILTER (WHERE ownership = 'FAMILY_SHARED')
                FROM purchase
                GROUP BY uid, item_kind, item_index
                ORDER BY uid, item_kind, item_index
                ON CONFLICT (uid, item_kind, item_index) DO UPDATE
                SET purchased_count = g.purchased_count + EXCLUDED.purchased_count,
                    shared_count = g.shared_count + EXCLUDED.shared_count,
                    updated_at = now()
            )
            SELECT a.n IS NOT NULL AS registered, item.kind, item.item_index, p.recorded_at,
                   coalesce(a.known_token = i.app_account_token, true) AS token_accepted, race.refused
            FROM input i
            LEFT JOIN account a USING (n)
            LEFT JOIN item USING (n)
            LEFT JOIN purchase p
              ON p.transaction_id = i.transaction_id AND p.store = i.store AND p.environment = i.environment
            CROSS JOIN (SELECT \(unsafeSQL: refuseLostAccountTokenRace) AS refused) AS race
            ORDER BY i.n
            """
    }
}

extension LedgerStore {
    /// A date as the wrapper binds it (timestamptz text).
    fileprivate static func text(_ date: Date) -> String {
        if case .text(let text) = date.postgresBind.value { return text }
        return ""
    }
}

/// A `text[]` parameter whose elements may be NULL.
struct TextArray: PostgresEncodable {
    let values: [String?]
    init(_ values: [String?]) { self.values = values }

    static var postgresTypeOID: UInt32 { PostgresType.textArray }
    var postgresBind: PostgresBind {
        PostgresBind(
            .text("{" + values.map { $0?.postgresArrayLiteral ?? "NULL" }.joined(separator: ",") + "}"),
            oid: PostgresType.textArray)
    }
}
