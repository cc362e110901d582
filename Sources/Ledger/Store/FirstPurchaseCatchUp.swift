import Foundation
import Logging
import Postgres

/// Folds newly recorded purchases into `first_purchases` (migration 0011), has its `Invalidation`
/// delete what a cache sharing its watermark holds that entries recorded since can change (the
/// reports' day cache: `Invalidation.reportDays`, from `Reports`, which owns that cache), and moves
/// the watermark, outside the purchase statement: before each report on a primary, and periodically
/// in `serve`. Safe to run from several processes at once (one runs, the others skip) and to repeat
/// (the upsert keeps the least `first_at`; a cached row deleted twice is simply filled again later).
public struct FirstPurchaseCatchUp: Sendable {
    /// What one run did.
    public enum Outcome: Sendable, Equatable {
        /// Purchases recorded since the watermark (less the overlap) were folded in: `changed` first
        /// purchases were added or moved earlier, the invalidation deleted `staleDays` cached days
        /// that entries recorded since can change; the watermark is now `watermark` (unchanged when
        /// the horizon could not be read).
        case caughtUp(changed: Int, staleDays: Int, watermark: Date)
        /// Nothing written: a standby or read-only connection, or another catch-up was running.
        case skipped(String)
    }

    /// What the catch-up has the owner of a cache built on its watermark delete, in the catch-up's
    /// transaction (READ COMMITTED, holding its lock, on a primary), after it read its horizon and
    /// before it moves the watermark: so every statement of `invalidate` sees every entry recorded
    /// before the new watermark, and what the cache keeps agrees with all of them. Required: a
    /// catch-up that moved the watermark without it would leave cached days a reader then trusts.
    public struct Invalidation: Sendable {
        /// Which recorded entries the cache must forget what they change.
        public enum Recorded: Sendable, Equatable {
            /// Those recorded at or after `since` (bind as `$n::timestamptz`; maybe `-infinity`).
            case since(String)
            /// All of them, whatever their `recorded_at` (the seeder's purchases): forget everything.
            case everything
        }

        /// What `invalidate` deletes, for the log ("stale report days").
        let what: String
        /// Deletes what entries `recorded` can change; returns how many cached days it deleted.
        let invalidate: @Sendable (_ recorded: Recorded, _ connection: PostgresConnection) async throws -> Int

        public init(
            what: String,
            _ invalidate:
                @escaping @Sendable (_ recorded: Recorded, _ connection: PostgresConnection) async throws -> Int
        ) {
            self.what = what
            self.invalidate = invalidate
        }
    }

    let client: PostgresClient
    let invalidation: Invalidation
    let logger: Logger

    public init(
        client: PostgresClient, invalidating invalidation: Invalidation,
        logger: Logger = Logger(label: "shopledger.first-purchases")
    ) {
        self.client = client
        self.invalidation = invalidation
        self.logger = logger
    }

    /// Folds in what was recorded since the watermark; with `everything`, every purchase whatever
    /// its `recorded_at` (the seeder writes purchases recorded in the past).
    @discardableResult
    public func run(everything: Bool = false) async throws -> Outcome {
        let outcome = try await whileLocked { connection in try await catchUp(everything: everything, on: connection) }
        switch outcome {
        case .ran(let caughtUp): return caughtUp
        case .skipped(let why): return .skipped(why)
        }
    }

    /// Whether `whileLocked` ran its body.
    public enum Locked<Value> {
        case ran(Value)
        /// A standby or read-only connection, or another catch-up held the lock.
        case skipped(String)
    }

    /// Runs `body` in a READ COMMITTED transaction of its own that holds the catch-up's lock, on a
    /// primary: what `body` writes cannot interleave with a catch-up (the report day cache is filled
    /// this way). Skipped, without waiting, on a standby, a read-only connection, or while another
    /// holds the lock.
    public func whileLocked<Value>(
        _ body: (PostgresConnection) async throws -> sending Value
    ) async throws
        -> sending Locked<Value>
    {
        try await client.withTransaction { connection in
            let (standby, readOnly) = try await connection.query(
                "SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on'"
            ).single().decode((Bool, Bool).self)
            if standby { return .skipped("a standby: the primary keeps first_purchases") }
            if readOnly { return .skipped("a read-only connection") }
            let locked = try await connection.query("SELECT pg_try_advisory_xact_lock(\(Self.lockKey))")
                .single().decode(Bool.self, at: 0)
            guard locked else { return .skipped("another catch-up is running") }
            return .ran(try await body(connection))
        }
    }

    private func catchUp(everything: Bool, on connection: PostgresConnection) async throws -> Outcome {
        // The horizon in a statement of its own: the upsert's snapshot, taken after it, then sees
        // every purchase recorded before it (READ COMMITTED takes a snapshot per statement).
        let horizon = try await connection.query("SELECT ledger_first_purchases_horizon()")
            .single().decode(Date?.self, at: 0)
        let since =
            everything
            ? "-infinity"
            : try await FirstPurchaseSQL.since(on: connection)
        let changed = try await connection.execute(
            """
            INSERT INTO first_purchases AS f (uid, book, first_at)
            SELECT p.uid, p.book, min(p.purchased_at)
            FROM purchases p
            WHERE p.recorded_at >= \(since)::timestamptz
              AND p.ownership = 'PURCHASED' AND p.currency IS NOT NULL
            GROUP BY p.uid, p.book
            -- One order for every catch-up, so two never wait on each other's rows in a cycle.
            ORDER BY p.uid, p.book
            ON CONFLICT (uid, book) DO UPDATE SET first_at = EXCLUDED.first_at
            WHERE EXCLUDED.first_at < f.first_at
            """)
        // The cache's stale days: after the horizon, so its statements see every entry recorded
        // before the watermark set below.
        let stale = try await invalidation.invalidate(everything ? .everything : .since(since), connection)
        if horizon == nil {
            logger.warning(
                """
                first purchases: another role's open transactions are not visible here, so the watermark \
                stays; grant pg_read_all_stats to the ledger's role
                """)
        }
        let watermark = try await connection.query(
            """
            UPDATE first_purchases_watermark
            SET caught_up_to = greatest(caught_up_to, coalesce(\(horizon)::timestamptz, caught_up_to))
            RETURNING caught_up_to
            """
        ).single().decode(Date.self, at: 0)
        return .caughtUp(changed: changed, staleDays: stale, watermark: watermark)
    }

    /// Catches up, logging instead of throwing: the readers are right without it, only slower.
    @discardableResult
    public func runLogged() async -> Outcome? {
        do {
            let outcome = try await run()
            if case .caughtUp(let changed, let stale, _) = outcome, changed > 0 || stale > 0 {
                logger.debug(
                    "first purchases caught up",
                    metadata: ["changed": "\(changed)", "\(invalidation.what)": "\(stale)"])
            }
            return outcome
        } catch {
            logger.warning("could not catch first purchases up; will try again", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// The advisory lock one catch-up at a time holds ("1stp").
    static let lockKey: Int64 = 0x3173_7470
}

/// SQL the catch-up, the reports and the reconciler share about `first_purchases`.
public enum FirstPurchaseSQL {
    /// How far before the watermark readers and the catch-up look again: covers a transaction that
    /// had started but was not yet listed in pg_stat_activity when the horizon was read, and small
    /// steps of the clock. Re-reading is harmless: the least `first_at` wins.
    public static let overlap = "interval '5 seconds'"

    /// From when purchases may be missing from `first_purchases`: every purchase recorded before
    /// it has been folded in.
    public static let since =
        "(SELECT coalesce(max(caught_up_to), '-infinity') - \(overlap) FROM first_purchases_watermark)"

    /// `since`'s value as the database writes it (maybe `-infinity`), to bind as `$n::timestamptz`:
    /// with a value, not a subquery, the planner sees how few purchases were recorded since and
    /// reads them by `purchases_by_recorded_at`.
    public static func since(on connection: PostgresConnection) async throws -> String {
        try await connection.query("SELECT (\(unsafeSQL: since))::text").single().decode(String.self, at: 0)
    }
}
