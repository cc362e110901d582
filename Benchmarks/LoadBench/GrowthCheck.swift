import BenchSupport
import Foundation
import Postgres

/// Issue 30's plan check: myinfo before and after the purchases table grows tenfold and is analyzed.
///
/// A long-lived connection's prepared statement is planned again after an ANALYZE; before statements
/// were re-prepared now and then (`preparedStatementMaxUses`), ours stayed on costly custom plans after
/// one, and myinfo fell by a third. Here, at the highest `--connections` level: an untimed warm-up and
/// three timed runs, then `shopledger seed` adds nine times the purchases already recorded (other users;
/// it ends with VACUUM ANALYZE) while the server keeps running, then a warm-up and three timed runs again.
/// myinfo's readers and their rows are the same before and after; only the table around them grew.
struct GrowthCheck {
    let server: BenchServer
    let workloads: Workloads

    static let runs = 3

    struct Report: Sendable {
        let purchasesBefore: Int
        let purchasesAfter: Int
        let before: [LoadResult]
        let after: [LoadResult]

        func print() {
            Swift.print(
                "\nmyinfo before and after the purchases table grew from \(purchasesBefore) to \(purchasesAfter) rows (shopledger seed, then VACUUM ANALYZE), \(GrowthCheck.runs) runs each"
            )
            Swift.print(
                "| phase | run | connections | requests/s | p50 ms | p99 ms | errors | CPU µs/request: server, PostgreSQL, load |"
            )
            Swift.print("|---|---|---|---|---|---|---|---|")
            for (phase, results) in [("before", before), ("after", after)] {
                for (index, result) in results.enumerated() {
                    let cpu =
                        result.cpu.map { $0.micros(per: result.completed).map(String.init).joined(separator: " + ") }
                        ?? "–"
                    Swift.print(
                        "| \(phase) | \(index + 1) | \(result.connections) | \(Int(result.requestsPerSecond.rounded())) | "
                            + String(format: "%.1f | %.1f", result.percentile(0.5), result.percentile(0.99))
                            + " | \(result.errors) | \(cpu) |")
                }
            }
            func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
            let rate = median(after.map(\.requestsPerSecond)) / max(1, median(before.map(\.requestsPerSecond)))
            func databaseMicros(_ results: [LoadResult]) -> Int {
                Int(median(results.map { ($0.cpu?.database ?? 0) * 1e6 / Double(max(1, $0.completed)) }).rounded())
            }
            Swift.print(
                "\nafter/before, medians: requests/s \(String(format: "%.2f", rate))×; PostgreSQL CPU per myinfo \(databaseMicros(before)) → \(databaseMicros(after)) µs"
            )
        }
    }

    func run() async throws -> Report {
        let before = try await timedRuns("before growth")
        let purchasesBefore = try await purchases()
        progress("LoadBench: seeding \(9 * purchasesBefore) more purchases (shopledger seed), then VACUUM ANALYZE")
        try seed(purchases: 9 * purchasesBefore)
        let purchasesAfter = try await purchases()
        let after = try await timedRuns("after growth")
        return Report(purchasesBefore: purchasesBefore, purchasesAfter: purchasesAfter, before: before, after: after)
    }

    /// An untimed warm-up, then `runs` timed myinfo runs at the highest `--connections` level.
    private func timedRuns(_ phase: String) async throws -> [LoadResult] {
        let options = workloads.options
        let connections = options.connections.max() ?? 32
        let requests = workloads.myinfoRequests
        _ = try await workloads.measure(
            "warm-up (\(phase))", requests, cycle: true, connections: connections,
            duration: .milliseconds(Int64(min(options.seconds, 2) * 1000)))
        var results: [LoadResult] = []
        for run in 1...Self.runs {
            results.append(
                try await workloads.measure(
                    "\(Workloads.myinfoLabel) (\(phase), run \(run))", requests, cycle: true, connections: connections))
        }
        return results
    }

    private func purchases() async throws -> Int {
        let client = PostgresClient(
            configuration: .init(
                connection: .init(url: server.databaseURL), minimumConnections: 0, maximumConnections: 1))
        defer { Task { await client.shutdown() } }
        return try await client.query("SELECT count(*)::int8 FROM purchases").single().decode(Int.self, at: 0)
    }

    /// `shopledger seed` on the benchmark's database (blocking: the benchmark has nothing else to do).
    private func seed(purchases: Int) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: server.binary)
        process.arguments = [
            "seed", "--purchases", String(purchases), "--days", "60", "--seed", "30", "--database-url",
            server.databaseURL,
        ]
        let log = server.folder + "/seed.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        defer { try? handle.close() }
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchError("shopledger seed exited with \(process.terminationStatus); see \(log)")
        }
    }
}
