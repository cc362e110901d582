import CivilDates
import Ledger
import Postgres

/// The invariant "every cached report day equals its recomputation" (migrations 0013 and 0022): each
/// day the report day cache holds, and a reader would use, has exactly the entry and buyer rows the
/// report's queries compute for that day from the ledger, per store and over all stores. Days the
/// entries recorded since the watermark can change are left out (readers compute those), as are days
/// whose boundaries moved and days an older build filled without their rows per store (readers
/// compute those too, and the next fill replaces them).
public struct ReportDayCacheCheck: ReconciliationCheck {
    public let name = "report_days_match_ledger"
    public let summary =
        "Every day in the report day cache holds exactly the entry and buyer rows the daily report computes "
        + "for it from the ledger."

    /// The most days one recomputation covers (a report's period limit).
    static let daysPerQuery = 366

    public init() {}

    public func run(on connection: PostgresConnection, failureLimit: Int) async throws -> ReconciliationCheckResult {
        let since = try await FirstPurchaseSQL.since(on: connection)
        let stored = try await connection.query(
            """
            SELECT r.time_zone, r.day::text FROM report_days r
            WHERE \(unsafeSQL: ReportDayCache.boundariesHold) AND r.by_store
            ORDER BY 1, 2
            """
        ).map { try $0.decode((String, String).self) }
        var byZone: [String: [CalendarDate]] = [:]
        for (zone, text) in stored {
            guard let day = CalendarDate(text) else { continue }
            byZone[zone, default: []].append(day)
        }
        var examined = 0
        var failures: [ReconciliationFailure] = []
        for (zone, days) in byZone.sorted(by: { $0.key < $1.key }) {
            let touched = try await ReportDayCache.touchedDays(days, timeZone: zone, since: since, on: connection)
            for run in Self.adjacentRuns(days.filter { !touched.contains($0) }) {
                examined += run.count
                failures += try await compare(run, timeZone: zone, since: since, on: connection)
            }
        }
        return ReconciliationCheckResult(
            name: name, summary: summary, examined: examined, examinedWhat: "cached report days (time zone, day)",
            failureCount: failures.count, failures: Array(failures.prefix(max(1, failureLimit))))
    }

    /// Each day of `days` (adjacent, ascending) whose stored rows differ from its recomputation.
    func compare(
        _ days: [CalendarDate], timeZone: String, since: String, on connection: PostgresConnection
    ) async throws -> [ReconciliationFailure] {
        let periods = try await RevenueQueries.periods(days.map { $0...$0 }, timeZone: timeZone, on: connection)
        let window = ReportWindow(timeZone: timeZone, periods: periods)
        let numbered = days.enumerated().map { ($0.element, $0.offset + 1) }
        let entries = Dictionary(grouping: try await RevenueQueries.entryGroups(window, on: connection), by: \.period)
        let buyers = Dictionary(
            grouping: try await RevenueQueries.buyerGroups(
                from: try await connection.query(RevenueQueries.buyerGroupsQuery(window, since: since))),
            by: \.period)
        let storedEntries = Dictionary(
            grouping: try await ReportDayCache.storedEntries(numbered, timeZone, on: connection), by: \.period)
        let storedBuyers = Dictionary(
            grouping: try await ReportDayCache.storedBuyers(numbered, timeZone, on: connection), by: \.period)
        return numbered.compactMap { day, period in
            let entriesDiffer = Self.difference(storedEntries[period] ?? [], entries[period] ?? [])
            let buyersDiffer = Self.difference(storedBuyers[period] ?? [], buyers[period] ?? [])
            guard entriesDiffer + buyersDiffer > 0 else { return nil }
            return ReconciliationFailure(
                id: "\(timeZone) \(day)",
                detail:
                    "\(entriesDiffer) entry rows and \(buyersDiffer) buyer rows differ from the day computed from the ledger"
            )
        }
    }

    /// How many rows are in one of `stored` and `computed` but not the other.
    static func difference<Row: Hashable>(_ stored: [Row], _ computed: [Row]) -> Int {
        let a = Set(stored)
        let b = Set(computed)
        // A duplicated stored row is a difference too (the report would count it twice).
        return a.symmetricDifference(b).count + (stored.count - a.count)
    }

    /// `days` (ascending) as runs of consecutive dates, each at most `daysPerQuery` long.
    static func adjacentRuns(_ days: [CalendarDate]) -> [[CalendarDate]] {
        var runs: [[CalendarDate]] = []
        for day in days {
            if let last = runs.last?.last, last.adding(days: 1) == day, runs[runs.count - 1].count < daysPerQuery {
                runs[runs.count - 1].append(day)
            } else {
                runs.append([day])
            }
        }
        return runs
    }
}
