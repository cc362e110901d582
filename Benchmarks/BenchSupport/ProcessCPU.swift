import Foundation

/// CPU seconds (user + system) that processes used, from /proc and getrusage. Unlike requests per
/// second, CPU per request stays meaningful when other work shares the machine: it says what two
/// dedicated cores could sustain. Depends on nothing of ours, so `scripts/bench-previous.sh
/// --harness current` can copy it into an older tree.
public enum ProcessCPU {
    /// All threads of `pid`; nil when it is gone.
    public static func seconds(of pid: Int32) -> Double? {
        guard let fields = statFields(pid), fields.count > 12 else { return nil }
        return fields[11...12].compactMap { Double($0) }.reduce(0, +) / ticksPerSecond
    }

    /// A PostgreSQL server's: the postmaster's own and its reaped children's time plus its live
    /// children's (backends, WAL writer, checkpointer, parallel workers).
    public static func postgresSeconds(postmaster: Int32) -> Double {
        guard postmaster > 0, let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else {
            return 0
        }
        var ticks = 0.0
        for entry in entries {
            guard let pid = Int32(entry), let fields = statFields(pid) else { continue }
            // After the command: state ppid … utime(11) stime(12) cutime(13) cstime(14).
            guard fields.count > 14, let ppid = Int32(fields[1]) else { continue }
            if pid == postmaster {
                ticks += fields[11...14].compactMap { Double($0) }.reduce(0, +)
            } else if ppid == postmaster {
                ticks += fields[11...12].compactMap { Double($0) }.reduce(0, +)
            }
        }
        return ticks / ticksPerSecond
    }

    /// The postmaster of the cluster in `dataDirectory` (the first line of postmaster.pid); 0 when none.
    public static func postmasterPID(dataDirectory: String) -> Int32 {
        let pidFile = (try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8)) ?? ""
        return pidFile.split(separator: "\n").first.flatMap { Int32($0) } ?? 0
    }

    /// This process (`RUSAGE_SELF`), or the children it has waited for (`RUSAGE_CHILDREN`).
    public static func rusageSeconds(_ who: Int32) -> Double {
        var usage = rusage()
        getrusage(who, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    private static func statFields(_ pid: Int32) -> [Substring]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }
}
