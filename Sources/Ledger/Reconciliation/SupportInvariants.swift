/// What holds for support actions (migration 0010), checked with the ledger's other invariants.
enum SupportInvariants {
    /// Every grant row's promotional count equals its live compensations (grants not revoked) and
    /// the replay of its promotional grant events; every action has exactly its one grant event; a
    /// revoke takes back a grant of the same user and item; no compensation moved money.
    static let grantsBacked = SQLReconciliationCheck(
        name: "support_grants_backed",
        summary: "Every item granted by support is counted by its live compensations and their grant events, each "
            + "support action has its one grant event, a revoke matches its grant, and no compensation moved money.",
        examinedWhat: "support actions",
        examinedSQL: "SELECT count(*) FROM support_actions",
        failuresSQL: """
            WITH live AS (
                SELECT uid, item_kind::text AS item_kind, item_index, count(*) AS live
                FROM support_actions a
                WHERE a.kind = 'grant' AND NOT EXISTS (SELECT 1 FROM support_actions r WHERE r.revokes = a.action_id)
                GROUP BY 1, 2, 3
            ),
            replay AS (
                SELECT uid, item_kind, item_index, sum(delta) AS replayed
                FROM grant_events WHERE source = 'promotional' GROUP BY 1, 2, 3
            )
            SELECT coalesce(g.uid, l.uid, r.uid) || ' ' || coalesce(g.item_kind, l.item_kind, r.item_kind) || ' '
                   || coalesce(g.item_index, l.item_index, r.item_index),
                   format('promotional count %s, live compensations %s, grant events replay to %s',
                          coalesce(g.promotional_count, 0), coalesce(l.live, 0), coalesce(r.replayed, 0))
            FROM (SELECT uid, item_kind::text AS item_kind, item_index, promotional_count FROM grants
                  WHERE promotional_count > 0) g
            FULL JOIN live l ON l.uid = g.uid AND l.item_kind = g.item_kind AND l.item_index = g.item_index
            FULL JOIN replay r ON r.uid = coalesce(g.uid, l.uid) AND r.item_kind = coalesce(g.item_kind, l.item_kind)
                 AND r.item_index = coalesce(g.item_index, l.item_index)
            WHERE coalesce(g.promotional_count, 0) <> coalesce(l.live, 0)
               OR coalesce(g.promotional_count, 0) <> coalesce(r.replayed, 0)
            UNION ALL
            SELECT 'support action ' || a.action_id, format('%s grant events, expected one', count(e.event_id))
            FROM support_actions a
            LEFT JOIN grant_events e ON e.source = 'promotional' AND e.entry_id = a.action_id AND e.uid = a.uid
                 AND e.item_kind = a.item_kind AND e.item_index = a.item_index
                 AND e.delta = CASE a.kind WHEN 'grant' THEN 1 ELSE -1 END
            GROUP BY a.action_id HAVING count(e.event_id) <> 1
            UNION ALL
            SELECT 'support action ' || r.action_id, 'revokes ' || r.revokes || ', which is not a grant of the same user and item'
            FROM support_actions r LEFT JOIN support_actions g ON g.action_id = r.revokes
            WHERE r.kind = 'revoke' AND (g.kind IS DISTINCT FROM 'grant' OR g.uid <> r.uid
                  OR g.item_kind <> r.item_kind OR g.item_index <> r.item_index)
            UNION ALL
            SELECT 'grant event ' || e.event_id, 'a promotional grant event with no support action'
            FROM grant_events e
            WHERE e.source = 'promotional' AND NOT EXISTS (SELECT 1 FROM support_actions a WHERE a.action_id = e.entry_id)
            UNION ALL
            SELECT 'posting ' || p.transaction_id || ' ' || p.entry_id, 'a posting on a support action'
            FROM postings p WHERE EXISTS (SELECT 1 FROM support_actions a WHERE a.action_id = p.entry_id)
            """)
}
