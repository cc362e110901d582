import Foundation
import Ledger
import Postgres

/// Items support granted as compensation, and revoked, in a report's window (`support_actions`,
/// migration 0010): grants in book `promotional`, never revenue. Read by `acted_at`'s index.
enum SupportGrantQueries {
    struct Group: Sendable, Hashable {
        let period: Int
        let kind: SupportAction.Kind
        let item: ItemID
        let count: Int
    }

    static func groups(_ window: ReportWindow, on connection: PostgresConnection) async throws -> [Group] {
        let rows = try await connection.query(
            """
            WITH bounds AS MATERIALIZED (
                SELECT array_agg(t.day::timestamp AT TIME ZONE \(window.timeZone)::text ORDER BY t.day) AS starts
                FROM unnest(\(window.periodStartTexts)::date[]) AS t (day)
            )
            SELECT width_bucket(a.acted_at, b.starts), a.kind, a.item_kind::text, a.item_index::int, count(*)::int
            FROM support_actions a CROSS JOIN bounds b
            WHERE a.acted_at >= \(window.startsAt)::timestamptz AND a.acted_at < \(window.endsAt)::timestamptz
            GROUP BY 1, 2, 3, 4
            ORDER BY 1, 2, 3, 4
            """)
        return try rows.map { row in
            let (period, kindText, itemKind, index, count) = try row.decode((Int, String, String, Int, Int).self)
            guard let kind = SupportAction.Kind(rawValue: kindText), let itemKind = ItemKind(rawValue: itemKind) else {
                throw PostgresError(code: .decoding, message: "support_actions has kind \(kindText) \(itemKind)")
            }
            return Group(period: period, kind: kind, item: ItemID(kind: itemKind, index: index), count: count)
        }
    }

    /// Adds `groups` to the grants of `figures` (period n is `figures[n - 1]`).
    static func add(_ groups: [Group], to figures: inout [PeriodFigures]) {
        for group in groups where figures.indices.contains(group.period - 1) {
            let key = GrantLineKey(book: SupportAction.book, item: group.item)
            switch group.kind {
            case .grant: figures[group.period - 1].grants[key, default: GrantFigures()].supportGrants += group.count
            case .revoke: figures[group.period - 1].grants[key, default: GrantFigures()].supportRevokes += group.count
            }
        }
    }
}
