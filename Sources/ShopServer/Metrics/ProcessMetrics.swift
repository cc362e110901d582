import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The standard Prometheus process metrics, read from `/proc/self` at scrape time: swift-prometheus 2
/// offers none, and dashboards and alerts built for any Prometheus client expect these names
/// (`process_cpu_seconds_total`, `process_resident_memory_bytes`, `process_open_fds`, `process_max_fds`,
/// `process_start_time_seconds`). Off Linux (no `/proc`) a reading is `nil` and nothing is exposed.
struct ProcessMetrics: Sendable {
    /// CPU time spent in user and system mode, in seconds.
    var cpuSeconds: Double
    /// Resident set size, in bytes.
    var residentBytes: Double
    /// Open file descriptors.
    var openFileDescriptors: Double
    /// The soft limit on open file descriptors (`ulimit -n`; what `/proc/self/limits` shows as
    /// "Max open files"), or nil when unlimited.
    var maxFileDescriptors: Double?
    /// When the process started, in seconds since the Unix epoch.
    var startTimeSeconds: Double

    /// Reads the current process's figures; nil where `/proc` is missing or unreadable.
    static func read(procRoot: String = "/proc") -> ProcessMetrics? {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        guard ticks > 0, pageSize > 0,
            let stat = try? String(contentsOfFile: procRoot + "/self/stat", encoding: .utf8),
            let fields = statFields(stat), fields.count > 19,
            let utime = Double(fields[11]), let stime = Double(fields[12]), let started = Double(fields[19]),
            let statm = try? String(contentsOfFile: procRoot + "/self/statm", encoding: .utf8),
            let residentPages = statm.split(separator: " ").dropFirst().first.flatMap({ Double($0) }),
            let bootTime = bootTime(procRoot: procRoot),
            let fds = try? FileManager.default.contentsOfDirectory(atPath: procRoot + "/self/fd")
        else { return nil }
        return ProcessMetrics(
            cpuSeconds: (utime + stime) / ticks, residentBytes: residentPages * pageSize,
            openFileDescriptors: Double(fds.count), maxFileDescriptors: openFileLimit(),
            startTimeSeconds: bootTime + started / ticks)
    }

    /// The fields of `/proc/self/stat` after the command name, which is in parentheses and may itself
    /// hold spaces and parentheses: field 3 (state) is element 0, so field n is element n - 3.
    static func statFields(_ stat: String) -> [Substring]? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
    }

    /// The boot time, `btime` of `/proc/stat`, in seconds since the Unix epoch.
    private static func bootTime(procRoot: String) -> Double? {
        guard let stat = try? String(contentsOfFile: procRoot + "/stat", encoding: .utf8) else { return nil }
        for line in stat.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst("btime ".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    private static func openFileLimit() -> Double? {
        var limit = rlimit()
        #if canImport(Glibc)
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        #else
        guard getrlimit(RLIMIT_NOFILE, &limit) == 0 else { return nil }
        #endif
        // RLIM_INFINITY is a cast macro Swift does not import: UInt64.max on Linux, Int64.max on Darwin.
        return limit.rlim_cur >= rlim_t(Int64.max) ? nil : Double(limit.rlim_cur)
    }
}
