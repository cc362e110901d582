import CivilDates
import Ledger
import Postgres

/// The daily report's figures per local day (migrations 0013 and 0022): for each cached (time zone,
/// day), the rows the entry and buyer queries return for that day as a period of its own: entries
/// per store, buyers over all stores (`report_day_buyers`) and per store (`report_day_store_buyers`).
/// Only days filled with both (`by_store`) are read; a day an older build filled is filled again. A day's rows depend
/// only on the entries effective that day and on first purchases, so a day that is over can be read
/// back instead of computed; distinct buyers do not add up across days, so a cached day is only ever
/// that one day's rows.
///
/// Whatever the cache holds, the figures are the same: a reader uses a cached day only when the
/// entries recorded since the catch-up's watermark (less the overlap) cannot change it, and computes
/// every other day as before. The catch-up deletes the days such entries change before it moves the
/// watermark (through `FirstPurchaseCatchUp.Invalidation.reportDays`, which every catch-up is given),
/// and `fill` writes under the catch-up's lock, so every day left cached agrees with
/// everything recorded before the watermark.
enum ReportDayCache {
    /// The entry and buyer groups of `periods` (each one day in `timeZone`, ascending), numbered as
    /// the periods are: the days the cache holds read back, the others computed over runs of
    /// adjacent days.
    static func groups(
        _ periods: [ReportPeriod], timeZone: String, on connection: PostgresConnection
    ) async throws -> (entries: [EntryGroup], buyers: [BuyerGroup]) {
        let since = try await FirstPurchaseSQL.since(on: connection)
        let usable = try await usableDays(periods.map(\.first), timeZone: timeZone, since: since, on: connection)
        let cached = periods.indices.filter { usable.contains(periods[$0].first) }
        var entries = try await storedEntries(cached.map { (periods[$0].first, $0 + 1) }, timeZone, on: connection)
        var buyers = try await storedBuyers(cached.map { (periods[$0].first, $0 + 1) }, timeZone, on: connection)
        for run in runs(periods.indices.filter { !usable.contains(periods[$0].first) }) {
            let window = ReportWindow(timeZone: timeZone, periods: Array(periods[run]))
            entries += try await RevenueQueries.entryGroups(window, on: connection).map {
                var group = $0
                group.period += run.lowerBound
                return group
            }
            buyers += try await RevenueQueries.buyerGroups(
                from: try await connection.query(RevenueQueries.buyerGroupsQuery(window, since: since))
            ).map {
                var group = $0
                group.period += run.lowerBound
                return group
            }
        }
        return (entries, buyers)
    }

    /// Stores the days of `periods` (each one day in `timeZone`) the cache lacks, computed from the
    /// ledger, that ended before the watermark (less the overlap) and that nothing recorded since
    /// changes; returns how many. Only inside `FirstPurchaseCatchUp.whileLocked` (a primary, READ
    /// COMMITTED, the catch-up's lock): every entry recorded before the watermark is then visible to
    /// these statements, and no catch-up deletes days between their reading and their writing.
    static func fill(_ periods: [ReportPeriod], timeZone: String, on connection: PostgresConnection) async throws -> Int
    {
        let since = try await FirstPurchaseSQL.since(on: connection)
        let days = periods.map(\.first.description)
        // A day whose boundaries have moved (the time zone's rules changed), or that an older build
        // filled without its rows per store, is filled again.
        try await connection.query(
            """
            DELETE FROM report_days r
            WHERE r.time_zone = \(timeZone)::text AND r.day = ANY(\(days)::date[])
              AND NOT (\(unsafeSQL: boundariesHold) AND r.by_store)
            """)
        let touched = try await touchedDays(periods.map(\.first), timeZone: timeZone, since: since, on: connection)
        let missing = try await connection.query(
            """
            SELECT t.day::text
            FROM unnest(\(days)::date[]) AS t (day)
            WHERE (t.day + 1)::timestamp AT TIME ZONE \(timeZone)::text <= \(since)::timestamptz
              AND NOT EXISTS (SELECT 1 FROM report_days r WHERE r.time_zone = \(timeZone)::text AND r.day = t.day)
            """
        ).compactMap { CalendarDate(try $0.decode(String.self, at: 0)) }
        let chosen = periods.indices.filter {
            missing.contains(periods[$0].first) && !touched.contains(periods[$0].first)
        }
        for run in runs(chosen) {
            let window = ReportWindow(timeZone: timeZone, periods: Array(periods[run]))
            let runDays = periods[run].map(\.first.description)
            try await connection.query(
                """
                INSERT INTO report_days (time_zone, day, starts_at, ends_at, by_store)
                SELECT \(timeZone)::text, t.day, t.day::timestamp AT TIME ZONE \(timeZone)::text,
                       (t.day + 1)::timestamp AT TIME ZONE \(timeZone)::text, true
                FROM unnest(\(runDays)::date[]) AS t (day)
                """)
            try await connection.query(
                storing(
                    RevenueQueries.entryGroupsQuery(window), into: "report_day_entries",
                    columns: [
                        "kind", "book", "store", "currency", "item_kind", "item_index", "ownership", "price_milli",
                        "entries",
                    ],
                    timeZone: timeZone, days: runDays))
            try await connection.query(
                storingBuyers(RevenueQueries.buyerGroupsQuery(window, since: since), timeZone: timeZone, days: runDays))
        }
        return chosen.count
    }

    // MARK: Parts

    /// Whether the cached day `r` still has the boundaries the database draws for it.
    static let boundariesHold = """
        (r.starts_at = r.day::timestamp AT TIME ZONE r.time_zone AND r.ends_at = (r.day + 1)::timestamp AT TIME ZONE r.time_zone)
        """

    /// The days among `days` in `timeZone` that the entries recorded since `since` can change (see
    /// `instantsTouchedSince`).
    static func touchedDays(
        _ days: [CalendarDate], timeZone: String, since: String, on connection: PostgresConnection
    ) async throws -> Set<CalendarDate> {
        let rows = try await connection.query(touchedDaysQuery(days, timeZone: timeZone, since: since))
        return Set(try rows.compactMap { CalendarDate(try $0.decode(String.self, at: 0)) })
    }

    static func touchedDaysQuery(_ days: [CalendarDate], timeZone: String, since: String) -> PostgresQuery {
        """
        SELECT DISTINCT t.day::text
        FROM (SELECT (i.at AT TIME ZONE \(timeZone)::text)::date AS day FROM \(instantsTouchedSince: since) i) t
        WHERE t.day = ANY(\(days.map(\.description))::date[])
        """
    }

    /// The cached days among `days` a reader may use: stored with the boundaries the database draws
    /// today and with their rows per store, and not changed by anything recorded since `since`.
    static func usableDays(
        _ days: [CalendarDate], timeZone: String, since: String, on connection: PostgresConnection
    ) async throws -> Set<CalendarDate> {
        let rows = try await connection.query(
            """
            SELECT r.day::text FROM report_days r
            WHERE r.time_zone = \(timeZone)::text AND r.day = ANY(\(days.map(\.description))::date[])
              AND \(unsafeSQL: boundariesHold) AND r.by_store
            """)
        let stored = Set(try rows.compactMap { CalendarDate(try $0.decode(String.self, at: 0)) })
        guard !stored.isEmpty else { return [] }
        return stored.subtracting(try await touchedDays(days, timeZone: timeZone, since: since, on: connection))
    }

    /// The stored entry rows of `days`, each numbered as its period.
    static func storedEntries(
        _ days: [(CalendarDate, Int)], _ timeZone: String, on connection: PostgresConnection
    ) async throws -> [EntryGroup] {
        guard !days.isEmpty else { return [] }
        return try RevenueQueries.entryGroups(
            from: try await connection.query(
                """
                SELECT d.n::int, e.kind, e.book, e.store, e.currency, e.item_kind, e.item_index, e.ownership,
                       e.price_milli, e.entries
                FROM unnest(\(days.map(\.0.description))::date[], \(days.map(\.1))::int[]) AS d (day, n)
                JOIN report_day_entries e ON e.time_zone = \(timeZone)::text AND e.day = d.day
                ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9
                """))
    }

    /// The stored buyer rows of `days` (over all stores, then per store), each numbered as its period.
    static func storedBuyers(
        _ days: [(CalendarDate, Int)], _ timeZone: String, on connection: PostgresConnection
    ) async throws -> [BuyerGroup] {
        guard !days.isEmpty else { return [] }
        return try RevenueQueries.buyerGroups(
            from: try await connection.query(
                """
                SELECT d.n::int, b.book, b.store, b.currency, b.item_kind, b.item_index, b.level, b.buyers,
                       b.first_time_buyers
                FROM unnest(\(days.map(\.0.description))::date[], \(days.map(\.1))::int[]) AS d (day, n)
                JOIN (
                    SELECT time_zone, day, book, NULL::text AS store, currency, item_kind, item_index, level, buyers,
                           first_time_buyers
                    FROM report_day_buyers
                    UNION ALL
                    SELECT time_zone, day, book, store, currency, item_kind, item_index, level, buyers,
                           first_time_buyers
                    FROM report_day_store_buyers
                ) b ON b.time_zone = \(timeZone)::text AND b.day = d.day
                ORDER BY 1, 2, 3, 4, 5, 6, 7
                """))
    }

    /// `query` (rows numbered by period, as the report's queries return them) inserted into `table`
    /// as the rows of `days` (period n is `days[n - 1]`), without the rows leaving the database.
    static func storing(
        _ query: PostgresQuery, into table: String, columns: [String], timeZone: String, days: [String]
    ) -> PostgresQuery {
        let zone = query.binds.count + 1
        return PostgresQuery(
            unsafeSQL: """
                INSERT INTO \(table) (time_zone, day, \(columns.joined(separator: ", ")))
                SELECT $\(zone)::text, ($\(zone + 1)::date[])[g.period], \(columns.map { "g." + $0 }.joined(separator: ", "))
                FROM (\(query.sql)) g
                """,
            binds: query.binds + [timeZone.postgresBind, days.postgresBind])
    }

    /// The buyer query's rows (numbered by period) inserted as the rows of `days`: those over all
    /// stores into `report_day_buyers`, those per store into `report_day_store_buyers`, in one
    /// statement that runs the query once.
    static func storingBuyers(_ query: PostgresQuery, timeZone: String, days: [String]) -> PostgresQuery {
        let zone = query.binds.count + 1
        let columns = ["book", "currency", "item_kind", "item_index", "level", "buyers", "first_time_buyers"]
        let names = columns.joined(separator: ", ")
        let values = columns.map { "g." + $0 }.joined(separator: ", ")
        return PostgresQuery(
            unsafeSQL: """
                WITH g AS MATERIALIZED (\(query.sql)),
                everywhere AS (
                    INSERT INTO report_day_buyers (time_zone, day, \(names))
                    SELECT $\(zone)::text, ($\(zone + 1)::date[])[g.period], \(values) FROM g WHERE g.store IS NULL
                )
                INSERT INTO report_day_store_buyers (time_zone, day, store, \(names))
                SELECT $\(zone)::text, ($\(zone + 1)::date[])[g.period], g.store, \(values) FROM g WHERE g.store IS NOT NULL
                """,
            binds: query.binds + [timeZone.postgresBind, days.postgresBind])
    }

    /// `indices` (ascending) as runs of adjacent ones.
    static func runs(_ indices: [Int]) -> [Range<Int>] {
        var runs: [Range<Int>] = []
        for index in indices {
            if let last = runs.last, last.upperBound == index {
                runs[runs.count - 1] = last.lowerBound..<(index + 1)
            } else {
                runs.append(index..<(index + 1))
            }
        }
        return runs
    }
}
