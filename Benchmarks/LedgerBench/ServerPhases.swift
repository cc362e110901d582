import BenchSupport
import Foundation
import Ledger
import Postgres
import Receipts

/// Where a purchase's time goes on the server: per-phase durations from the server log
/// (`log_min_duration_statement = 0` logs parse, bind (where planning happens) and execute
/// separately for the extended protocol; the commit's WAL flush comes after execute and is in none
/// of them), EXPLAIN (ANALYZE, BUFFERS, WAL) of the statement, and statements per call.
enum ServerPhases {
    static func logSize(_ log: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: log))?[.size] as? Int) ?? 0
    }

    static func logText(_ log: String, from offset: Int) -> String {
        guard let handle = FileHandle(forReadingAtPath: log) else { return "" }
        defer { try? handle.close() }
        try? handle.seek(toOffset: UInt64(offset))
        return String(decoding: (try? handle.readToEnd()) ?? Data(), as: UTF8.self)
    }

    /// Runs `body` with every statement's duration logged.
    static func report(log: String, admin: PostgresClient, _ body: () async throws -> Void) async throws {
        try await admin.query("ALTER SYSTEM SET log_min_duration_statement = 0")
        try await admin.query("SELECT pg_reload_conf()")
        try await Task.sleep(for: .milliseconds(300))
        try await body()
        try await admin.query("ALTER SYSTEM RESET log_min_duration_statement")
        try await admin.query("SELECT pg_reload_conf()")
    }

    /// Mean server time per phase of the purchase statement in the log since `offset`.
    static func summary(_ label: String, log: String, from offset: Int) -> String {
        var totals: [String: (sum: Double, count: Int)] = [:]
        for line in logText(log, from: offset).split(separator: "\n")
        where line.contains("duration: ") && line.contains("WITH input") {
            guard let range = line.range(of: "duration: ") else { continue }
            let rest = line[range.upperBound...]
            let value = Double(rest.prefix { $0 == "." || $0.isNumber }) ?? 0
            let phase = rest.contains(" parse ") ? "parse" : rest.contains(" bind ") ? "bind (plan)" : "execute"
            totals[phase, default: (0, 0)].sum += value
            totals[phase, default: (0, 0)].count += 1
        }
        let calls = max(totals["execute"]?.count ?? 1, 1)
        var parts: [String] = []
        var total = 0.0
        for phase in ["parse", "bind (plan)", "execute"] {
            let (sum, count) = totals[phase] ?? (0, 0)
            total += sum / Double(calls)
            parts.append("\(phase) " + String(format: "%.3f ms", sum / Double(calls)) + " (\(count)×)")
        }
        return "server time per new purchase, \(label): " + parts.joined(separator: ", ")
            + String(format: "; total %.3f ms over %d calls", total, calls)
    }

    /// EXPLAIN (ANALYZE, BUFFERS, WAL) of `runs` new purchases (they are recorded), averaged per
    /// plan node: one sample on a busy machine is mostly noise.
    static func explain(_ statement: PurchaseStatement, client: PostgresClient, runs: Int = 50) async throws {
        var planning = 0.0, execution = 0.0
        let lsn = try await client.query("SELECT pg_current_wal_insert_lsn()::text").single().decode(String.self, at: 0)
        var nodes: [String: Double] = [:]
        var order: [String] = []
        for run in 0..<runs {
            let query = statement.query(
                transactionId: "explain-\(run)-\(UUID().uuidString)", uid: "100003",
                product: "com.memolease.sesac1.sprout3")
            let rows = try await client.query(
                PostgresQuery(
                    unsafeSQL: "EXPLAIN (ANALYZE, BUFFERS, WAL, FORMAT JSON) " + query.sql, binds: query.binds))
            let json = try rows.single().decode(String.self, at: 0)
            guard let top = (try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])?.first,
                let plan = top["Plan"] as? [String: Any]
            else { throw BenchError("unexpected EXPLAIN output") }
            planning += top["Planning Time"] as? Double ?? 0
            execution += top["Execution Time"] as? Double ?? 0
            func add(_ label: String, _ value: Double) {
                if nodes[label] == nil { order.append(label) }
                nodes[label, default: 0] += value
            }
            func visit(_ node: [String: Any]) {
                if node["Node Type"] as? String == "ModifyTable", let relation = node["Relation Name"] as? String {
                    add("insert into \(relation)", node["Actual Total Time"] as? Double ?? 0)
                }
                for child in node["Plans"] as? [[String: Any]] ?? [] { visit(child) }
            }
            visit(plan)
            for trigger in top["Triggers"] as? [[String: Any]] ?? [] {
                let constraint = trigger["Constraint Name"] as? String ?? trigger["Trigger Name"] as? String ?? "?"
                add(
                    "trigger for \(constraint) on \(trigger["Relation"] as? String ?? "?")",
                    trigger["Time"] as? Double ?? 0)
            }
        }
        // WAL from the insert position (per-node WAL counts overlap where CTEs feed each other).
        let walBytes = try await client.query(
            "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), \(lsn)::pg_lsn)::float8"
        ).single().decode(Double.self, at: 0)
        let n = Double(runs)
        print("EXPLAIN (ANALYZE, BUFFERS, WAL) of \(runs) new purchases, means (custom plans: EXPLAIN plans each run):")
        print(
            String(
                format: "    planning %.3f ms, execution %.3f ms, WAL %.0f bytes per purchase", planning / n,
                execution / n, walBytes / n))
        for label in order { print(String(format: "    %.3f ms  ", nodes[label]! / n) + label) }
    }

    /// Statements per call, counted in the server log (log_statement = all) for 100 calls each.
    static func statementsPerCall(
        log: String, client: PostgresClient, ledger: LedgerStore,
        transaction: @escaping (String) -> VerifiedTransaction, counter: Counter
    ) async throws {
        func statements(_ label: String, _ body: () async throws -> Void) async throws {
            try await client.query("ALTER SYSTEM SET log_statement = 'all'")
            try await client.query("SELECT pg_reload_conf()")
            try await Task.sleep(for: .milliseconds(300))
            let before = logSize(log)
            try await body()
            try await client.query("ALTER SYSTEM RESET log_statement")
            try await client.query("SELECT pg_reload_conf()")
            let lines = logText(log, from: before).split(separator: "\n").filter {
                $0.contains("LOG:  statement:") || $0.contains("LOG:  execute")
            }
            let ledgerLines = lines.filter { !$0.contains("log_statement") && !$0.contains("pg_reload_conf") }
            print("\(label): \(ledgerLines.count) statements for 100 calls; first call's:")
            for line in ledgerLines.prefix(3) { print("   ", line.split(separator: "LOG:").last!.prefix(70)) }
        }
        try await statements("new purchase") {
            for _ in 0..<100 { _ = try await ledger.recordPurchase(transaction("s\(counter.next())"), for: "100001") }
        }
        let again = (0..<100).map { _ in "e\(counter.next())" }
        for id in again { _ = try await ledger.recordPurchase(transaction(id), for: "100002") }
        try await statements("duplicate") {
            for id in again { _ = try await ledger.recordPurchase(transaction(id), for: "100002") }
        }
        try await statements("purchase after a parked refund") {
            for index in 0..<100 {
                let id = "r\(counter.next())"
                _ = try await ledger.recordRefundEvent(
                    RefundEvent(
                        sourceEventId: "ev\(index)-\(id)", kind: .refund, store: .appStore, environment: .production,
                        transactionId: id, signedDate: Date(), evidenceSHA256: [UInt8](repeating: 7, count: 32)))
                _ = try await ledger.recordPurchase(transaction(id), for: "100003")
            }
        }
    }
}
