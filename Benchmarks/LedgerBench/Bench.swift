import Foundation
import Ledger
import Logging
import Postgres
import Receipts
import Synchronization

/// Measures `LedgerStore.recordPurchase` against a durable private cluster (fsync on,
/// synchronous_commit on; run the release build): calls/s and latency at 1 and 8 callers for new
/// purchases and duplicates, the server's parse/plan/execute time per purchase, and statements per
/// call counted in the server log.
@main
struct Bench {
    static func main() async throws {
        var logger = Logger(label: "bench")
        logger.logLevel = .warning
        let folder = "/tmp/shopledger-ledger-bench-\(ProcessInfo.processInfo.processIdentifier)"
        let log = folder + "/data.log"
        let cluster = try LocalPostgres(
            options: .init(dataDirectory: folder + "/data", port: 55_000 + Int(ProcessInfo.processInfo.processIdentifier % 400), durable: true),
            logger: logger)
        let running = try await cluster.start()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let admin = PostgresClient(configuration: .init(connection: .init(url: running.url(database: "postgres")), minimumConnections: 0, maximumConnections: 1), logger: logger)
        try await admin.query("DROP DATABASE IF EXISTS bench WITH (FORCE)")
        try await admin.query("CREATE DATABASE bench")
        let settings = try await admin.query("SELECT current_setting('fsync'), current_setting('synchronous_commit'), version()").single()
        print("server:", try settings.decode((String, String, String).self))
        await admin.shutdown()

        let client = PostgresClient(configuration: .init(connection: .init(url: running.url(database: "bench")), minimumConnections: 8, maximumConnections: 8), logger: logger)
        try await LedgerSchema.migrator(logger: logger).migrate(client)
        let ledger = LedgerStore(client: client, logger: logger)
        let users = (0..<1000).map { "user\($0)" }
        let profile = try UserProfile(json: #"{"nick":"bench"}"#)
        for uid in users { _ = try await ledger.register(uid: uid, profile: profile) }

        let counter = Counter()
        func transaction(_ id: String) -> VerifiedTransaction {
            let date = Date()
            var digest = [UInt8](repeating: 0, count: 32)
            for (index, byte) in id.utf8.enumerated() { digest[index % 32] ^= byte &+ UInt8(truncatingIfNeeded: index) }
            return VerifiedTransaction(
                store: .appStore, environment: .production, transactionId: id, originalTransactionId: id,
                bundleId: "com.memolease.sesac1", productId: "com.memolease.sesac1.sprout\(1 + id.hashValue.magnitude % 4)",
                productType: .nonConsumable, purchaseDate: date, originalPurchaseDate: date, signedDate: date,
                priceMilli: 2_500_000, currency: "KRW", storefront: "KOR", evidenceSHA256: digest)
        }

        // Warm-up.
        for _ in 0..<500 {
            let id = "w\(counter.next())"
            _ = try await ledger.recordPurchase(transaction(id), for: users[Int(id.hashValue.magnitude % 1000)])
        }

        func run(_ label: String, callers: Int, callsEach: Int, duplicate: Bool) async throws {
            // Duplicates: record the transactions first, then post them again.
            var ids: [[String]] = (0..<callers).map { _ in (0..<callsEach).map { _ in "t\(counter.next())" } }
            if duplicate {
                for caller in ids { for id in caller { _ = try await ledger.recordPurchase(transaction(id), for: "user\(id.hashValue.magnitude % 1000)") } }
            } else {
                ids = ids.map { $0 }
            }
            let start = ContinuousClock.now
            let latencies = try await withThrowingTaskGroup(of: [Duration].self) { group in
                for caller in ids {
                    group.addTask {
                        var latencies: [Duration] = []
                        latencies.reserveCapacity(caller.count)
                        for id in caller {
                            let began = ContinuousClock.now
                            let outcome = try await ledger.recordPurchase(transaction(id), for: "user\(id.hashValue.magnitude % 1000)")
                            latencies.append(ContinuousClock.now - began)
                            switch (outcome, duplicate) {
                            case (.recorded, false), (.duplicate, true): break
                            default: fatalError("unexpected \(outcome)")
                            }
                        }
                        return latencies
                    }
                }
                var all: [Duration] = []
                for try await part in group { all += part }
                return all
            }
            let elapsed = ContinuousClock.now - start
            let sorted = latencies.sorted()
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            func ms(_ d: Duration) -> String { String(format: "%.3f", Double(d.components.attoseconds) / 1e15 + Double(d.components.seconds) * 1000) }
            let mean = latencies.reduce(Duration.zero, +) / latencies.count
            print("\(label): callers \(callers), calls \(latencies.count), \(String(format: "%.0f", Double(latencies.count) / seconds)) calls/s, mean \(ms(mean)) ms, p50 \(ms(sorted[sorted.count / 2])) ms, p99 \(ms(sorted[sorted.count * 99 / 100])) ms")
        }

        // Baseline: one trivial query's round trip through the wrapper.
        do {
            let start = ContinuousClock.now
            for _ in 0..<3000 { _ = try await client.query("SELECT 1") }
            print("SELECT 1 baseline, 1 caller: \((ContinuousClock.now - start) / 3000) per query")
        }

        // Server-side time per phase (extended protocol: parse, bind = plan, execute) for new purchases.
        do {
            try await client.query("ALTER SYSTEM SET log_min_duration_statement = 0")
            try await client.query("SELECT pg_reload_conf()")
            try await Task.sleep(for: .milliseconds(300))
            let before = (try? String(contentsOfFile: log, encoding: .utf8))?.count ?? 0
            for _ in 0..<300 { _ = try await ledger.recordPurchase(transaction("x\(counter.next())"), for: "user5") }
            try await client.query("ALTER SYSTEM RESET log_min_duration_statement")
            try await client.query("SELECT pg_reload_conf()")
            let text = String(((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").dropFirst(before))
            var totals: [String: (Double, Int)] = [:]
            for line in text.split(separator: "\n") where line.contains("duration: ") && line.contains("WITH input") {
                guard let range = line.range(of: "duration: ") else { continue }
                let rest = line[range.upperBound...]
                let value = Double(rest.prefix { $0 == "." || $0.isNumber }) ?? 0
                let phase = rest.contains("parse <unnamed>") ? "parse" : rest.contains("bind <unnamed>") ? "bind (plan)" : "execute"
                totals[phase, default: (0, 0)].0 += value
                totals[phase, default: (0, 0)].1 += 1
            }
            for (phase, (sum, count)) in totals.sorted(by: { $0.key < $1.key }) {
                print("server \(phase): \(String(format: "%.3f", sum / Double(max(count, 1)))) ms mean over \(count)")
            }
        }

        for round in 1...2 {
            print("round \(round)")
            try await run("new purchases", callers: 1, callsEach: 3000, duplicate: false)
            try await run("new purchases", callers: 8, callsEach: 1000, duplicate: false)
            try await run("duplicates", callers: 1, callsEach: 3000, duplicate: true)
            try await run("duplicates", callers: 8, callsEach: 1000, duplicate: true)
        }

        // Statements per call, counted in the server log (log_statement = all) for 100 calls each.
        func statements(_ label: String, _ body: () async throws -> Void) async throws {
            try await client.query("ALTER SYSTEM SET log_statement = 'all'")
            try await client.query("SELECT pg_reload_conf()")
            try await Task.sleep(for: .milliseconds(300))
            let before = (try? String(contentsOfFile: log, encoding: .utf8))?.count ?? 0
            try await body()
            try await client.query("ALTER SYSTEM RESET log_statement")
            try await client.query("SELECT pg_reload_conf()")
            let text = String(((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").dropFirst(before))
            let lines = text.split(separator: "\n").filter { $0.contains("LOG:  statement:") || $0.contains("LOG:  execute") }
            let ledgerLines = lines.filter { !$0.contains("log_statement") && !$0.contains("pg_reload_conf") }
            print("\(label): \(ledgerLines.count) statements for 100 calls; first call's:")
            for line in ledgerLines.prefix(6) { print("   ", line.split(separator: "LOG:").last!.prefix(70)) }
        }
        try await statements("new purchase") {
            for _ in 0..<100 { _ = try await ledger.recordPurchase(transaction("s\(counter.next())"), for: "user1") }
        }
        let again = (0..<100).map { _ in "d\(counter.next())" }
        for id in again { _ = try await ledger.recordPurchase(transaction(id), for: "user2") }
        try await statements("duplicate") {
            for id in again { _ = try await ledger.recordPurchase(transaction(id), for: "user2") }
        }
        try await statements("purchase after a parked refund") {
            for index in 0..<100 {
                let id = "r\(counter.next())"
                _ = try await ledger.recordRefundEvent(RefundEvent(
                    sourceEventId: "ev\(index)-\(id)", kind: .refund, store: .appStore, environment: .production,
                    transactionId: id, signedDate: Date(), evidenceSHA256: [UInt8](repeating: 7, count: 32)))
                _ = try await ledger.recordPurchase(transaction(id), for: "user3")
            }
        }

        let began = ContinuousClock.now
        let report = try await Reconciler(client: client).run()
        print("reconcile on \(try await client.query("SELECT count(*) FROM purchases").single().decode(Int.self, at: 0)) purchases: passed \(report.passed) in \(ContinuousClock.now - began)")
        if !report.passed { print(report.text) }
        await client.shutdown()
        try await cluster.stop()
    }
}

final class Counter: Sendable {
    private let value = Mutex(0)
    func next() -> Int { value.withLock { $0 += 1; return $0 } }
}
