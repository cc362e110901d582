import BenchSupport
import Foundation
import Postgres

/// What the machine and the server did during a run, to tell a CPU-bound run from one waiting on
/// WAL flushes:
/// - CPU seconds of the PostgreSQL server (postmaster, its live children, and the children it has
///   reaped), of this process, and of the programs it ran and waited for (pgbench). Unlike the
///   machine's busy share, these stay meaningful when other work shares the machine: CPU per
///   purchase says what two dedicated cores could sustain.
/// - The machine's busy share from /proc/stat (everything, other users' work included).
/// - WAL flushes and their mean duration from pg_stat_wal (the bench turns track_wal_io_timing
///   on; backends report at most once a second, so a run's figure can lag by that much).
struct ServerLoad {
    struct Sample {
        let machine: [Double]  // user nice system idle iowait irq softirq steal, in ticks
        let server: Double
        let bench: Double
        let children: Double
        let walSyncs: Double
        let walSyncMillis: Double
    }

    struct Usage: CustomStringConvertible {
        /// Busy share of all cores, 0…1, whoever used them.
        let busy: Double
        /// CPU seconds during the run.
        let server: Double
        let client: Double
        let walSyncs: Double
        /// Mean time of one WAL flush (needs track_wal_io_timing).
        let millisPerFlush: Double
        var description: String {
            String(format: "machine CPU busy %.0f%%", busy * 100)
        }
    }

    let client: PostgresClient
    let postmasterPID: Int32

    init(client: PostgresClient, dataDirectory: String) {
        self.client = client
        self.postmasterPID = ProcessCPU.postmasterPID(dataDirectory: dataDirectory)
    }

    func sample() async throws -> Sample {
        let row = try await client.query("SELECT wal_sync::float8, wal_sync_time FROM pg_stat_wal").single()
        let (syncs, syncMillis) = try row.decode((Double, Double).self)
        let stat = (try? String(contentsOfFile: "/proc/stat", encoding: .utf8)) ?? ""
        let machine =
            stat.split(separator: "\n").first { $0.hasPrefix("cpu ") }.map { line in
                line.split(separator: " ").dropFirst().prefix(8).compactMap { Double($0) }
            } ?? []
        return Sample(
            machine: machine, server: ProcessCPU.postgresSeconds(postmaster: postmasterPID),
            bench: ProcessCPU.rusageSeconds(RUSAGE_SELF.rawValue),
            children: ProcessCPU.rusageSeconds(RUSAGE_CHILDREN.rawValue), walSyncs: syncs, walSyncMillis: syncMillis)
    }

    static func usage(from start: Sample, to end: Sample) -> Usage {
        var busy = 0.0
        if start.machine.count == 8, end.machine.count == 8 {
            let delta = zip(end.machine, start.machine).map { $0 - $1 }
            let total = max(delta.reduce(0, +), 1)
            busy = (total - delta[3] - delta[4]) / total
        }
        let syncs = end.walSyncs - start.walSyncs
        return Usage(
            busy: busy, server: end.server - start.server,
            client: (end.bench - start.bench) + (end.children - start.children), walSyncs: syncs,
            millisPerFlush: syncs > 0 ? (end.walSyncMillis - start.walSyncMillis) / syncs : 0)
    }
}
