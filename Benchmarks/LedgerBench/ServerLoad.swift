import Foundation
import Postgres

/// What the machine and the server did during a run: CPU use of all cores from /proc/stat (the
/// server, the bench and pgbench share them) and WAL flushes from pg_stat_wal, to tell a CPU-bound
/// run from one waiting on fsync.
struct ServerLoad {
    struct Sample {
        let cpu: [Double]  // user nice system idle iowait irq softirq steal, in ticks
        let walSyncs: Double
        let walBytes: Double
    }

    struct Usage: CustomStringConvertible {
        /// Busy share of all cores, 0…1.
        let busy: Double
        let ioWait: Double
        let walSyncs: Double
        let walBytes: Double
        var description: String {
            String(format: "CPU busy %.0f%%, iowait %.0f%%", busy * 100, ioWait * 100)
        }
    }

    let client: PostgresClient

    func sample() async throws -> Sample {
        let stat = (try? String(contentsOfFile: "/proc/stat", encoding: .utf8)) ?? ""
        let cpu = stat.split(separator: "\n").first { $0.hasPrefix("cpu ") }.map { line in
            line.split(separator: " ").dropFirst().prefix(8).compactMap { Double($0) }
        } ?? []
        let row = try await client.query("SELECT wal_sync::float8, wal_bytes::float8 FROM pg_stat_wal").single()
        let (syncs, bytes) = try row.decode((Double, Double).self)
        return Sample(cpu: cpu, walSyncs: syncs, walBytes: bytes)
    }

    static func usage(from start: Sample, to end: Sample) -> Usage {
        guard start.cpu.count == 8, end.cpu.count == 8 else { return Usage(busy: 0, ioWait: 0, walSyncs: 0, walBytes: 0) }
        let delta = zip(end.cpu, start.cpu).map { $0 - $1 }
        let total = max(delta.reduce(0, +), 1)
        return Usage(
            busy: (total - delta[3] - delta[4]) / total, ioWait: delta[4] / total,
            walSyncs: end.walSyncs - start.walSyncs, walBytes: end.walBytes - start.walBytes)
    }
}
