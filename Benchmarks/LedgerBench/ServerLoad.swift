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
        let pidFile = (try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8)) ?? ""
        self.postmasterPID = pidFile.split(separator: "\n").first.flatMap { Int32($0) } ?? 0
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
            machine: machine, server: serverSeconds(), bench: Self.rusageSeconds(RUSAGE_SELF.rawValue),
            children: Self.rusageSeconds(RUSAGE_CHILDREN.rawValue), walSyncs: syncs, walSyncMillis: syncMillis)
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

    private static func rusageSeconds(_ who: Int32) -> Double {
        var usage = rusage()
        getrusage(who, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// The postmaster's own and reaped children's time plus its live children's, from /proc.
    private func serverSeconds() -> Double {
        guard postmasterPID > 0, let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else {
            return 0
        }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var total = 0.0
        for entry in entries {
            guard let pid = Int32(entry), let fields = Self.statFields(pid) else { continue }
            // After the command: state ppid … utime(11) stime(12) cutime(13) cstime(14).
            guard fields.count > 14, let ppid = Int32(fields[1]) else { continue }
            if pid == postmasterPID {
                total += fields[11...14].compactMap { Double($0) }.reduce(0, +)
            } else if ppid == postmasterPID {
                total += fields[11...12].compactMap { Double($0) }.reduce(0, +)
            }
        }
        return total / ticks
    }

    private static func statFields(_ pid: Int32) -> [Substring]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }
}
